"""SODAPOP's 220 seed names in 8 groups (the authors' ``names.py``), as data in ``data/sodapop/names/``.

Group keys follow the paper's abbreviations: EA (European American, WEAT), AA (African American, WEAT),
AS (Asian) and HS (Hispanic) (NYC "Popular Baby Names" 2012–2019), each ``_f`` (female) or ``_m`` (male).
List order is the file order (it drives the row order of the t-SNE plots). The analysis uses the first
25 names of each group (:func:`analysis_groups`), so the AS/HS lists (27/33/30/30) are truncated as in
the authors' code; the remaining 20 names still get distractors and still count in the vocabulary
filter when they are loaded.

>>> groups = load_groups()
>>> {k: len(v) for k, v in groups.items()}
{'EA_f': 25, 'EA_m': 25, 'AA_f': 25, 'AA_m': 25, 'AS_f': 27, 'AS_m': 33, 'HS_f': 30, 'HS_m': 30}
>>> groups["EA_f"][:3], sum(map(len, analysis_groups().values()))
(['Amanda', 'Courtney', 'Heather'], 200)
"""

from __future__ import annotations

from pathlib import Path

from ..errors import CorpusError
from ..paths import data_dir, missing_data_fix

#: Group key → file stem in ``data/sodapop/names``.
FILES = {
    "EA_f": "european_american_female", "EA_m": "european_american_male",
    "AA_f": "african_american_female", "AA_m": "african_american_male",
    "AS_f": "asian_female", "AS_m": "asian_male",
    "HS_f": "hispanic_female", "HS_m": "hispanic_male",
}
#: The eight demographic groups of the SODAPOP names: race × gender, ``<race>_<f|m>``.
GROUPS = tuple(FILES)
RACES = {"EA": "European American", "AA": "African American", "AS": "Asian", "HS": "Hispanic"}
GENDERS = {"f": "female", "m": "male"}
#: Names per group that enter the analyses (the authors' ``[:25]``).
ANALYSIS_SIZE = 25


def label(group: str) -> str:
    """'AA_f' → 'African American female'."""
    race, gender = group.split("_")
    return f"{RACES[race]} {GENDERS[gender]}"


def race_of(group: str) -> str:
    return group.split("_")[0]


def gender_of(group: str) -> str:
    return GENDERS[group.split("_")[1]]


def read_names(path: str | Path) -> list[str]:
    """Names of one file, one per line (blank lines ignored); a duplicate stops with file:line."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: name file not found; {missing_data_fix()}.")
    names: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        name = line.strip()
        if not name:
            continue
        if any(c.isspace() for c in name):
            raise CorpusError(f"{path}:{number}: {name!r} is not one first name (it contains a space); "
                              "put one name per line.")
        if name in seen:
            raise CorpusError(f"{path}:{number}: duplicate name {name!r} (first on line {seen[name]}); "
                              "remove the repeated line.")
        seen[name] = number
        names.append(name)
    if not names:
        raise CorpusError(f"{path}: the name file is empty; put one first name per line.")
    return names


def load_groups(folder: str | Path | None = None) -> dict[str, list[str]]:
    """Group key → names in file order; a name in two groups stops with both files named."""
    folder = Path(folder) if folder is not None else data_dir() / "sodapop" / "names"
    groups = {g: read_names(folder / f"{stem}.txt") for g, stem in FILES.items()}
    owner: dict[str, str] = {}
    for g, names in groups.items():
        for n in names:
            if n in owner:
                raise CorpusError(f"{folder}: {n!r} is listed both in {FILES[owner[n]]}.txt and {FILES[g]}.txt; "
                                  "keep it in one group.")
            owner[n] = g
    return groups


def analysis_groups(n: int = ANALYSIS_SIZE, folder: str | Path | None = None) -> dict[str, list[str]]:
    """The first ``n`` names of every group (25: the paper's 200 analysed names)."""
    groups = load_groups(folder)
    short = {g: len(v) for g, v in groups.items() if len(v) < n}
    if n < 1 or short:
        raise CorpusError(f"analysis size must be between 1 and {min(map(len, groups.values()))} "
                          f"(the smallest group), got {n}; pass a number in that range.")
    return {g: v[:n] for g, v in groups.items()}


def group_of(groups: dict[str, list[str]]) -> dict[str, str]:
    """Name → group key."""
    return {n: g for g, names in groups.items() for n in names}
