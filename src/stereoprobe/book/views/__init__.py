"""The chapters' front ends: the tables and figures (views) each notebook of the book shows, computed with the
probes.

One module per probe's chapters (:mod:`~stereoprobe.book.views.unqover`, ``nli``, ``sodapop``, and ``zoo`` for
the models chapter); a notebook imports its module as ``chapter`` and only calls and shows. (The folder is not
called ``chapters``: :func:`stereoprobe.book.chapters` lists the book's chapters.)
"""
