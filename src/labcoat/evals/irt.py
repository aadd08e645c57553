"""A multidimensional item response model fitted on the history: a control variate, or a predictor.

``P(model m answers item i) = sigmoid(a_i . theta_m + b_i)`` with ``r`` ability dimensions
(``r = 1`` is the two-parameter logistic model of tinyBenchmarks and metabench). Items and
models are fitted by alternating, vectorised Newton steps with Gaussian priors (MAP), so the
fit is deterministic and takes well under a second on thousands of items.

For ``method="irt"`` the fit never decides what the estimate is: :mod:`labcoat.evals.estimate`
adds the design-based mean of the residuals ``y - p`` to the model's prediction (a difference
estimator), so a wrong or misfitting model costs precision, never validity. For
``method="model"`` it predicts the items a model was not evaluated on
(:meth:`ItemModel.expected_score`, the p-IRT estimate of tinyBenchmarks): a biased estimate,
whose weight and interval the plan calibrates leave-models-out on the history.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: prior precision of the item slopes and intercepts, and of the abilities (a standard normal)
_ITEM_RIDGE = 0.5
_ABILITY_RIDGE = 1.0
#: a logit is kept within this bound, so a perfect item stays finite
_LOGIT_CAP = 8.0


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@dataclass(frozen=True)
class ItemModel:
    """Fitted item parameters: slopes ``a`` (items x r) and intercepts ``b`` (items,); the
    history's abilities ``theta`` (models x r) give the prior for a new model's ability."""

    a: np.ndarray
    b: np.ndarray
    theta_mean: np.ndarray
    theta_cov: np.ndarray

    @property
    def dims(self) -> int:
        return int(self.a.shape[1])

    def predict(self, theta: np.ndarray, items: np.ndarray | None = None) -> np.ndarray:
        """Probabilities ``(items, models)`` for abilities ``theta`` ``(models, r)``."""
        a = self.a if items is None else self.a[items]
        b = self.b if items is None else self.b[items]
        return _sigmoid(np.clip(a @ theta.T + b[:, None], -_LOGIT_CAP * 2, _LOGIT_CAP * 2))

    def abilities(self, y: np.ndarray, items: np.ndarray, *, iterations: int = 25) -> np.ndarray:
        """MAP abilities ``(models, r)`` of models whose scores on ``items`` are ``y``
        ``(len(items), models)``; the prior is the history's spread of abilities, widened."""
        a = self.a[items]
        b = self.b[items]
        prior_prec = np.linalg.inv(self.theta_cov * 2.0 + 0.25 * np.eye(self.dims))
        mu = self.theta_mean
        theta = np.tile(mu, (y.shape[1], 1))
        for _ in range(iterations):
            p = _sigmoid(np.clip(a @ theta.T + b[:, None], -2 * _LOGIT_CAP, 2 * _LOGIT_CAP))
            w = p * (1.0 - p) + 1e-6
            grad = a.T @ (y - p) - prior_prec @ (theta - mu).T  # r x models
            hess = np.einsum("ir,im,is->mrs", a, w, a) + prior_prec[None]
            step = np.linalg.solve(hess, grad.T[..., None])[..., 0]
            theta = theta + np.clip(step, -2.0, 2.0)
            if np.abs(step).max() < 1e-6:
                break
        return theta

    def expected_score(self, y: np.ndarray, items: np.ndarray) -> np.ndarray:
        """The model-based full-benchmark score ``(models,)`` of models whose scores on the
        drawn ``items`` are ``y`` ``(len(items), models)``: their observed scores plus the
        predicted probabilities of every item not drawn, over the benchmark's size."""
        y = np.asarray(y, dtype=float)
        if y.ndim == 1:
            y = y[:, None]
        theta = self.abilities(y, items)
        p = self.predict(theta)
        unseen = np.ones(self.b.size, dtype=bool)
        unseen[items] = False
        return (y.sum(axis=0) + p[unseen].sum(axis=0)) / self.b.size

    def to_dict(self) -> dict:
        return {
            "a": self.a.round(5).tolist(),
            "b": self.b.round(5).tolist(),
            "theta_mean": self.theta_mean.tolist(),
            "theta_cov": self.theta_cov.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict) -> "ItemModel":
        a = np.asarray(data["a"], dtype=float)
        return cls(
            a.reshape(len(a), -1),
            np.asarray(data["b"], dtype=float),
            np.asarray(data["theta_mean"], dtype=float),
            np.asarray(data["theta_cov"], dtype=float).reshape(a.shape[1], a.shape[1]),
        )


def fit_items(scores: np.ndarray, dims: int = 2, *, iterations: int = 40) -> ItemModel:
    """Fit the item model to a history ``scores`` (items x models, values in [0, 1])."""
    y = np.asarray(scores, dtype=float)
    n_items, n_models = y.shape
    dims = max(1, min(dims, n_models - 1))
    rng = np.random.default_rng(0)
    p_item = (y.sum(axis=1) + 0.5) / (n_models + 1.0)
    b = np.log(p_item / (1.0 - p_item))
    centred = y - y.mean(axis=1, keepdims=True)
    u, s, vt = np.linalg.svd(centred, full_matrices=False)
    theta = vt[:dims].T * np.sqrt(n_models)  # models x r, unit scale
    theta = theta + 1e-3 * rng.standard_normal(theta.shape)
    a = u[:, :dims] * s[:dims] / np.sqrt(n_models) * 4.0
    eye_item = np.eye(dims + 1) * _ITEM_RIDGE
    eye_item[-1, -1] = 0.05  # a weak prior on the intercept
    for _ in range(iterations):
        # items given abilities: (a_i, b_i) by one Newton step each
        x = np.hstack([theta, np.ones((n_models, 1))])  # models x (r+1)
        params = np.hstack([a, b[:, None]])  # items x (r+1)
        p = _sigmoid(np.clip(params @ x.T, -2 * _LOGIT_CAP, 2 * _LOGIT_CAP))
        w = p * (1.0 - p) + 1e-6
        grad = (y - p) @ x - params @ eye_item
        hess = np.einsum("mr,im,ms->irs", x, w, x) + eye_item[None]
        step = np.linalg.solve(hess, grad[..., None])[..., 0]
        params = params + np.clip(step, -2.0, 2.0)
        a, b = params[:, :dims], params[:, dims]
        # abilities given items
        p = _sigmoid(np.clip(a @ theta.T + b[:, None], -2 * _LOGIT_CAP, 2 * _LOGIT_CAP))
        w = p * (1.0 - p) + 1e-6
        grad = a.T @ (y - p) - _ABILITY_RIDGE * theta.T
        hess = np.einsum("ir,im,is->mrs", a, w, a) + _ABILITY_RIDGE * np.eye(dims)[None]
        step = np.linalg.solve(hess, grad.T[..., None])[..., 0]
        theta = theta + np.clip(step, -2.0, 2.0)
    cov = np.atleast_2d(np.cov(theta.T)) if n_models > 1 else np.eye(dims)
    return ItemModel(a, b, theta.mean(axis=0), cov)


def crossfit(
    model: ItemModel, y: np.ndarray, idx: np.ndarray, strata_of_sample: np.ndarray, k: int = 2
) -> tuple[np.ndarray, np.ndarray]:
    """Cross-fitted predictions: each drawn item's prediction comes from an ability fitted on
    the other folds, and the full-benchmark mean prediction averages the folds' fits. Returns
    ``(predictions for the drawn items (n, models), mean prediction over all items (models,))``.
    """
    from labcoat.evals._design import folds

    y = np.asarray(y, dtype=float)
    fold = folds(strata_of_sample, k)
    pred = np.empty_like(y)
    total = np.zeros(y.shape[1])
    used = 0
    for f in range(k):
        test = fold == f
        if not test.any() or test.all():
            continue
        theta = model.abilities(y[~test], idx[~test])
        pred[test] = model.predict(theta, idx[test])
        total += model.predict(theta).mean(axis=0)
        used += 1
    if used == 0:  # too few items to split: one in-sample fit
        theta = model.abilities(y, idx)
        return model.predict(theta, idx), model.predict(theta).mean(axis=0)
    return pred, total / used


__all__ = ["ItemModel", "crossfit", "fit_items"]
