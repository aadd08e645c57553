"""Scratch: new healthy setups, run through the same doctor_verdict."""
import sys, time
import torch
from torch import nn
from torch.nn import functional as F
from tests.corpus.healthy import digits, seed, adam, diabetes
from tests.corpus.registry import doctor_verdict

torch.set_num_threads(1)

class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(64, 32), nn.ReLU())
        self.mu = nn.Linear(32, 8); self.logvar = nn.Linear(32, 8)
        self.dec = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 64))
    def forward(self, x):
        h = self.enc(x); mu, lv = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * lv) if self.training else mu
        return self.dec(z), mu, lv

def vae_loss(out, x):
    rec, mu, lv = out
    return F.mse_loss(rec, x) + 1e-3 * (-0.5 * (1 + lv - mu**2 - lv.exp()).sum(1).mean())

def vae():
    seed(); x, _ = digits(400); m = VAE()
    return doctor_verdict(m, (x, x.clone()), vae_loss, adam(m, 3e-3))

def spectral_norm_mlp():
    seed(); sn = nn.utils.parametrizations.spectral_norm
    m = nn.Sequential(sn(nn.Linear(64, 64)), nn.ReLU(), sn(nn.Linear(64, 10)))
    return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m, 3e-3))

def zero_init_head():
    seed(); m = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10))
    nn.init.zeros_(m[2].weight); nn.init.zeros_(m[2].bias)
    return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m))

class STE(nn.Module):
    def __init__(self):
        super().__init__(); self.a = nn.Linear(64, 32); self.b = nn.Linear(32, 10)
    def forward(self, x):
        h = torch.tanh(self.a(x)); q = torch.sign(h); h = h + (q - h).detach()
        return self.b(h)

def straight_through_binary():
    seed(); m = STE(); return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m, 3e-3))

class Ckpt(nn.Module):
    def __init__(self):
        super().__init__(); self.a = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU()); self.b = nn.Linear(64, 10)
    def forward(self, x):
        from torch.utils.checkpoint import checkpoint
        return self.b(checkpoint(self.a, x, use_reentrant=False))

def gradient_checkpointing():
    seed(); m = Ckpt(); return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m))

class Temp(nn.Module):
    def __init__(self):
        super().__init__(); self.f = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)); self.logit_scale = nn.Parameter(torch.tensor(0.0))
    def forward(self, x):
        return self.f(x) * self.logit_scale.exp()

def learnable_temperature():
    seed(); m = Temp(); return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m))

def sam_step(model, batch, optimizer, loss_fn, rho=0.05):
    x, y = batch
    optimizer.zero_grad(); loss = loss_fn(model(x), y); loss.backward()
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.norm(torch.stack([p.grad.norm() for p in params])) + 1e-12
    eps = [rho * p.grad / norm for p in params]
    with torch.no_grad():
        for p, e in zip(params, eps): p.add_(e)
    optimizer.zero_grad(); loss_fn(model(x), y).backward()
    with torch.no_grad():
        for p, e in zip(params, eps): p.sub_(e)
    optimizer.step(); return loss

def sam():
    seed(); m = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
    return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9), step=sam_step)

class MHA(nn.Module):
    def __init__(self):
        super().__init__(); self.inp = nn.Linear(8, 32); self.att = nn.MultiheadAttention(32, 4, batch_first=True); self.out = nn.Linear(32, 10)
    def forward(self, x):
        h = self.inp(x.view(-1, 8, 8)); a, _ = self.att(h, h, h, need_weights=False); return self.out((h + a).mean(1))

def attention_rows_as_tokens():
    seed(); m = MHA(); return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m, 3e-3))

def ema_step_factory():
    ema = {}
    def step(model, batch, optimizer, loss_fn):
        x, y = batch; optimizer.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); optimizer.step()
        with torch.no_grad():
            for n, p in model.named_parameters():
                ema[n] = p.detach().clone() if n not in ema else ema[n].mul_(0.99).add_(p.detach(), alpha=0.01)
        return loss
    return step

def ema_in_step():
    seed(); m = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10)); return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m), step=ema_step_factory())

def gelu_mlp_regression_standardized():
    seed(); x, y = diabetes(); m = nn.Sequential(nn.Linear(x.shape[1], 32), nn.GELU(), nn.Linear(32, 1))
    return doctor_verdict(m, (x, y), nn.MSELoss(), adam(m, 3e-3))

def fake_quant_qat():
    seed()
    class FQ(nn.Module):
        def __init__(self):
            super().__init__(); self.a = nn.Linear(64, 32); self.b = nn.Linear(32, 10)
        def forward(self, x):
            h = F.relu(self.a(x)); h = torch.fake_quantize_per_tensor_affine(h, 0.05, 0, 0, 255); return self.b(h)
    m = FQ(); return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), adam(m, 3e-3))

def mlp_bn_eval_dropout_heavy():
    seed(); m = nn.Sequential(nn.Linear(64, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, 10))
    return doctor_verdict(m, digits(), nn.CrossEntropyLoss(), torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-4))

CASES = [vae, spectral_norm_mlp, zero_init_head, straight_through_binary, gradient_checkpointing, learnable_temperature, sam, attention_rows_as_tokens, ema_in_step, gelu_mlp_regression_standardized, fake_quant_qat, mlp_bn_eval_dropout_heavy]
if __name__ == "__main__":
    names = sys.argv[1:]
    for c in CASES:
        if names and c.__name__ not in names: continue
        t = time.time()
        try:
            v = c()
            print(f"{c.__name__:35s} broken={v.broken} where={v.where} detail={v.detail} {time.time()-t:.1f}s", flush=True)
        except Exception as e:
            print(f"{c.__name__:35s} RAISED {type(e).__name__}: {e}", flush=True)
