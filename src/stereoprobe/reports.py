"""What a probe's ``report`` returns: its tables as pandas DataFrames, by name, and how they are written.

>>> import pandas as pd
>>> rep = Report("demo", {"intensity": pd.DataFrame({"model": ["m"], "mu": [0.5]})}, stems={"intensity": "gender_intensity"})
>>> list(rep), rep["intensity"].loc[0, "mu"], rep.files()
(['intensity'], np.float64(0.5), ['gender_intensity.csv'])
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

from .atomic import atomic_file

if TYPE_CHECKING:  # pandas is imported by whoever builds the tables, not by `import stereoprobe`
    import pandas as pd


@dataclass
class Report(Mapping):
    """A probe's tables by name (a read-only mapping of DataFrames), with what the run adds:

    * ``title`` — one line that says what was measured (the command line prints it first);
    * ``stems`` — each table's file name without ``.csv``, as :meth:`write_csv` and ``stereoprobe … -o`` write it;
    * ``headings`` — each table's heading as the command line prints it;
    * ``notes`` — anything the reader should know (a comparison with no differing word, a degenerate model);
    * ``extra`` — objects for further analysis (SODAPOP's ``run`` and success-rate matrix ``sr``).
    """

    title: str
    tables: dict[str, pd.DataFrame]
    stems: dict[str, str] = field(default_factory=dict)
    headings: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, key: str) -> pd.DataFrame:
        return self.tables[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.tables)

    def __len__(self) -> int:
        return len(self.tables)

    def stem(self, key: str) -> str:
        return self.stems.get(key, key)

    def files(self) -> list[str]:
        """The CSV file names :meth:`write_csv` writes, in the order of the tables."""
        return [f"{self.stem(k)}.csv" for k in self.tables]

    def write_csv(self, folder: str | Path) -> list[Path]:
        """Write every table as ``folder/<stem>.csv`` (without the index), each file atomically: a table appears
        whole or not at all. The folder is created if missing. Returns the paths."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for key, table in self.tables.items():
            path = folder / f"{self.stem(key)}.csv"
            with atomic_file(path, newline="") as f:  # newline="": as pandas opens a path itself
                table.to_csv(f, index=False)
            paths.append(path)
        return paths

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {len(t)}×{t.shape[1]}" for k, t in self.tables.items())
        return f"<Report {self.title!r}: {shapes}>"


__all__ = ["Report"]
