"""The Bias-NLI report's table: the net neutral NN, the fraction neutral FN and the thresholds T:0.5 and T:0.7
(Dev et al. 2020, §4), each with a bootstrap interval, per row (a model, or a model's template, or a variant), and
their relative change against a baseline row (the paper's "diff", Tables 8, 9 and 15)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from ..errors import StereoprobeError
from . import measures

__all__ = ["MEASURES", "neutrality_row", "measures_table"]

MEASURES = ("NN", "FN", "T:0.5", "T:0.7")


def neutrality_row(probs: pd.DataFrame, *, n_boot: int = 1000, seed: int = 0, aggregate: str = "pair") -> dict:
    """One table row: each measure's value and CI (``NN, NN_lo, NN_hi, …``) and the number of pairs; a row with no
    pair to measure (a generated reading whose every answer went unparsed: the pairs with no label are left out) has
    0 pairs and no values, not an error.

    >>> neutrality_row(pd.DataFrame(columns=list(measures.PROB_COLUMNS)))["pairs"]
    0
    """
    if isinstance(probs, pd.DataFrame) and probs.empty and set(measures.PROB_COLUMNS) <= set(probs.columns):
        return {"pairs": 0} | {f"{m}{end}": float("nan") for m in MEASURES for end in ("", "_lo", "_hi")}
    t = measures.neutrality(probs, aggregate=aggregate, n_boot=n_boot, seed=seed)
    row: dict = {"pairs": int(t["n"].iloc[0])}
    for m in MEASURES:
        row.update({m: t.at[m, "value"], f"{m}_lo": t.at[m, "lo"], f"{m}_hi": t.at[m, "hi"]})
    return row


def measures_table(probs: Mapping[tuple, pd.DataFrame], names: Sequence[str] = ("model", "probe"), *,
                   baseline: Mapping[str, str] | None = None, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """NN, FN, T:0.5, T:0.7 (with CIs) per key of ``probs`` (tuples named by ``names``).

    ``baseline={"variant": "orig"}`` adds ``diff_<measure>``: the relative change (%) against the row
    that has the same other keys and that value of the named key — the "diff" of Tables 8, 9 and 15. A key
    the baseline rows hold one value of is not matched: Table 15's one ``orig`` run (repeat 0) is the
    baseline of every repeat of the random directions.

    >>> p = {k: pd.DataFrame({"entail": [0.1], "neutral": [n], "contradiction": [0.9 - n]})
    ...      for k, n in {("orig", 0): 0.5, ("rand", 0): 0.25, ("rand", 1): 0.75}.items()}
    >>> measures_table(p, ("variant", "repeat"), baseline={"variant": "orig"}, n_boot=10)["diff_FN"].tolist()
    [0.0, -100.0, 0.0]
    """
    rows = [dict(zip(names, key)) | neutrality_row(p, n_boot=n_boot, seed=seed) for key, p in probs.items()]
    table = pd.DataFrame(rows)
    if baseline:
        (col, base), = baseline.items()
        base_rows = table[table[col] == base]
        if base_rows.empty:
            raise StereoprobeError(f"No row has {col} = {base!r}; the baseline must be one of the keys.")
        others = [n for n in names if n != col and base_rows[n].nunique() > 1]
        ref = base_rows.set_index(others)[list(MEASURES)] if others else base_rows[list(MEASURES)]
        joined = table.join(ref.add_suffix("_base"), on=others) if others else table.assign(
            **{f"{m}_base": ref[m].iloc[0] for m in MEASURES})
        for m in MEASURES:
            table[f"diff_{m}"] = (joined[m] - joined[f"{m}_base"]) / joined[f"{m}_base"] * 100
    return table
