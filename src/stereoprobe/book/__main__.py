"""``python -m stereoprobe.book``: the ``stereoprobe book`` command, whose options are defined once, in
:mod:`stereoprobe.cli`; exit status 0 ok, 1 a notebook or the build failed, 2 bad input."""

import sys

from stereoprobe.cli import book_main

sys.exit(book_main())
