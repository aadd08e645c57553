"""Log templates, mined as Drain does (He et al. 2017, the ``drain3`` library).

Training logs are mostly the same few lines with other numbers in them. Every line is first
masked (numbers, hex ids, paths' digits become ``<NUM>``/``<HEX>``); a masked line seen before
gets its template from a dictionary, and only a new masked shape goes to drain3's tree, which
merges shapes that differ in a word into one template (``loading <*>``). drain3's cluster ids are
stable while its templates generalise, so the final text of each template is read once at the
end. The parameters of a line are the tokens where its template has a wildcard.
"""

from __future__ import annotations

import re
from typing import Any

#: what the mask replaces, in order: hex ids, then numbers (ints, floats, exponents, nan/inf)
_MASK = re.compile(
    r"0x[0-9a-fA-F]+|\b[0-9a-f]{12,}\b|"
    r"(?<![\w.])[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![\w])|"
    r"(?<![\w.])[-+]?(?:nan|inf|NaN|Inf|NAN|INF)(?![\w])"
)
WILDCARD = "<*>"
ZERO_DIGITS = bytes.maketrans(b"123456789", b"000000000")  # bytes: 20x str.translate
#: a time stamp a logging format puts first (ISO, asctime, glog): not part of any template
_TIME_PREFIX = re.compile(
    r"^\[?(?:\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?|"
    r"[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+)\]?\s*"
)


#: entries a per-line cache holds at most (a run of unique lines must not eat the memory)
CACHED = 1_000_000


def digit_key(text: str) -> bytes:
    """``text`` with every digit a zero: lines that differ only in their numbers share it, and
    share their template and everything their words say (level, signals)."""
    return text.encode("utf-8", "replace").translate(ZERO_DIGITS)


def strip_time(text: str) -> str:
    """``text`` without the time stamp a logging format put in front of it."""
    return (
        _TIME_PREFIX.sub("", text, count=1) if text[:1].isdigit() or text[:1] in "[IWEF" else text
    )


def mask(text: str) -> str:
    """``text`` with its numbers and ids replaced by placeholders: the key of the shape cache."""
    return _MASK.sub("<NUM>", strip_time(text))


def _require_drain3() -> Any:
    from labcoat.extras import import_module

    drain3 = import_module("drain3", "logs")
    config = import_module("drain3.template_miner_config", "logs")
    return drain3.TemplateMiner, config.TemplateMinerConfig


class Miner:
    """Templates of a stream of lines: :meth:`add` returns a template id for each line."""

    def __init__(self, *, similarity: float = 0.4, depth: int = 4):
        TemplateMiner, TemplateMinerConfig = _require_drain3()
        config = TemplateMinerConfig()
        config.profiling_enabled = False
        config.drain_sim_th = similarity
        config.drain_depth = depth
        config.parametrize_numeric_tokens = True
        config.drain_max_clusters = None
        self.miner = TemplateMiner(config=config)
        self.shapes: dict[str, int] = {}
        self.keys: dict[bytes, tuple[int, str]] = {}  # digits zeroed -> (template id, shape)
        self.lines = 0

    def add(self, text: str) -> int:
        """The template id of ``text`` (a drain3 cluster id)."""
        return self.add_shape(text)[0]

    def add_shape(self, text: str) -> tuple[int, str]:
        """The template id of ``text`` and its masked shape (the key of every per-shape cache)."""
        self.lines += 1
        key = digit_key(text)  # most lines: seen before
        hit = self.keys.get(key)
        if hit is not None:
            return hit
        found = self.mine(text)
        if len(self.keys) < CACHED:
            self.keys[key] = found
        return found

    def mine(self, text: str) -> tuple[int, str]:
        """The template id and masked shape of a line no digit-zeroed key cached."""
        shape = _MASK.sub("<NUM>", strip_time(text))
        found = self.shapes.get(shape)
        if found is None:
            found = self.miner.add_log_message(shape)["cluster_id"] if shape.strip() else 0
            if len(self.shapes) < CACHED:  # a run of unique lines must not eat the memory
                self.shapes[shape] = found
        return found, shape

    def add_template(self, template: str) -> int:
        """The id, in this miner, of a template another miner found (a shard's)."""
        found = self.shapes.get(template)
        if found is None:
            masked = template.replace(WILDCARD, "<NUM>")
            found = self.miner.add_log_message(masked)["cluster_id"] if masked.strip() else 0
            self.shapes[template] = found
        return found

    def templates(self) -> dict[int, str]:
        """Every template id and its final text (``<NUM>`` and drain3's ``<*>`` as ``<*>``)."""
        out = {0: ""}
        for cluster in self.miner.drain.clusters:
            out[cluster.cluster_id] = _wild(cluster.get_template())
        return out


def _wild(template: str) -> str:
    return template.replace("<NUM>", WILDCARD).replace("<HEX>", WILDCARD)


def parameters(text: str, template: str) -> list[str]:
    """The values of ``text`` where ``template`` has a wildcard (Drain keeps the token count)."""
    if WILDCARD not in template:
        return []
    tokens, slots = strip_time(text).split(), template.split()
    if len(tokens) != len(slots):
        return [m.group() for m in _MASK.finditer(text)]
    out = []
    for token, slot in zip(tokens, slots):
        if slot == WILDCARD:
            out.append(token)
        elif WILDCARD in slot:  # "loss=<*>": the part the wildcard covers
            pattern = "^" + ".*?".join(re.escape(p) for p in slot.split(WILDCARD)) + "$"
            pattern = pattern.replace(".*?", "(.*?)")
            m = re.match(pattern, token)
            out.extend(m.groups() if m else [token])
    return out


__all__ = ["CACHED", "ZERO_DIGITS", "Miner", "WILDCARD", "digit_key", "mask", "parameters"]
