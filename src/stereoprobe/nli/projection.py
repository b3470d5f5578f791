"""Projection debiasing: bias directions, subspaces, random controls and the embedding hook.

Dev, Li, Phillips, Srikumar, "On Measuring and Mitigating Biased Inferences of Word Embeddings",
AAAI 2020, §4–5; the authors' ``embedding_bias.py`` and ``gen_random_bias.py``, and ``get_bert_bias.py`` /
``bert_encoder.py`` on their ``bert_debias`` branch. A bias subspace with orthonormal basis b_1 … b_k is
removed from every embedding x by

    x′ = x − Σ_i (x · b_i) b_i.

The authors' code applies this formula to whatever vectors it is given, assuming unit-norm, mutually
orthogonal b_i; here the directions are always orthonormalized first (:func:`orthonormalize`), so any
non-degenerate set of directions works. Numpy only (torch is imported inside :func:`projection_hook`).

Directions (no script of the authors computes the GloVe ones: book appendix *Where the code and the paper
differ*, Bias-NLI: gender direction, subspace recipe): gender = :func:`gender_direction` (he − she);
nationality = :func:`subspace` of the 8 DemonymsTrain vectors with k = 1; religion = k = 2 of the 8
AdherentsTrain vectors. Controls (same appendix, Bias-NLI: random controls): :func:`random_directions`
(seeded Gaussian), :func:`random_word_pc_directions` (the GloVe script ``gen_random_bias.py``).
Table 7 (and Table 12): :func:`principal_value_ratios` of :func:`pair_differences` (Gendered) or unit word
vectors.

>>> X = np.array([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0]])
>>> project_out(X, [2.0, 0.0, 0.0])          # a non-unit direction is normalized first
array([[0., 2., 3.],
       [0., 1., 0.]])
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ProjectionError

__all__ = [
    "GENDERED_PAIRS",
    "ProjectionError",
    "unit_rows",
    "orthonormalize",
    "project_out",
    "vectors_for",
    "gender_direction",
    "subspace",
    "pair_differences",
    "principal_value_ratios",
    "abs_cosine",
    "random_directions",
    "random_word_pc_directions",
    "projection_hook",
]

#: The paper's Gendered set (printed in its supplement): 9 pairs, used for Table 7.
GENDERED_PAIRS = (("man", "woman"), ("himself", "herself"), ("john", "mary"), ("father", "mother"), ("boy", "girl"),
                  ("son", "daughter"), ("his", "her"), ("guy", "gal"), ("male", "female"))
SUBSPACE_METHODS = ("svd_uncentered", "pca_centered")
GENDER_METHODS = ("normalize_each", "raw")
_RANK_TOL = 1e-8


def _matrix(a, what: str) -> np.ndarray:
    m = np.atleast_2d(np.asarray(a, dtype=float))
    if m.ndim != 2 or m.size == 0:
        raise ProjectionError(f"{what} must be a vector or a (rows, dim) matrix, got shape {np.shape(a)}.")
    if not np.isfinite(m).all():
        raise ProjectionError(f"{what} contain NaN or infinite values; fix the embedding file or the inputs.")
    return m


def unit_rows(matrix) -> np.ndarray:
    """Each row divided by its Euclidean norm (a 1-D input is one row); zero rows are an error.

    >>> unit_rows([[3.0, 4.0], [0.0, 2.0]]).tolist()
    [[0.6, 0.8], [0.0, 1.0]]
    """
    m = _matrix(matrix, "Vectors")
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    if (norms == 0).any():
        rows = np.flatnonzero(norms[:, 0] == 0).tolist()
        raise ProjectionError(f"Row(s) {rows} are zero vectors and have no direction; drop them.")
    return m / norms


def orthonormalize(directions, tol: float = _RANK_TOL) -> np.ndarray:
    """An orthonormal basis (k, d) of the span of k directions, by QR (= Gram–Schmidt in input order).

    Row i is direction i minus its components along the earlier ones, normalized, with the same
    orientation (so one direction comes back as b/‖b‖). A direction that lies (within ``tol``, relative
    to its norm) in the span of the earlier ones, or k > d, is an error.

    >>> orthonormalize([[2.0, 0.0, 0.0], [1.0, 1.0, 0.0]]).tolist()
    [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    """
    d = unit_rows(directions)
    k, dim = d.shape
    if k > dim:
        raise ProjectionError(f"{k} directions in {dim} dimensions cannot be linearly independent; pass at most {dim}.")
    q, r = np.linalg.qr(d.T)
    diag = np.diag(r)
    flat = np.flatnonzero(np.abs(diag) <= tol)
    if flat.size:
        raise ProjectionError(f"Direction(s) {flat.tolist()} lie in the span of the earlier ones (rank-deficient); "
                              "drop the duplicates or pass independent directions.")
    return (q * np.sign(diag)).T + 0.0  # + 0.0: no negative zeros


def project_out(X, directions) -> np.ndarray:
    """x′ = x − Σ (x · b_i) b_i for every row x of ``X`` (any shape ``(..., d)``), b = orthonormalized directions.

    Keeps the floating dtype of ``X``. Projecting a whole embedding matrix E this way equals projecting
    every looked-up embedding (what ``embedding_bias.py`` does inside the model); a zero (padding) row
    stays zero.

    >>> project_out([[1.0, 1.0, 1.0]], [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0]])   # a 2-D subspace
    array([[0., 0., 1.]])
    """
    X = np.asarray(X)
    if not np.issubdtype(X.dtype, np.floating):
        X = X.astype(float)
    basis = orthonormalize(directions)
    if X.shape[-1] != basis.shape[1]:
        raise ProjectionError(f"Vectors have dimension {X.shape[-1]} but the directions {basis.shape[1]}; "
                              "build the directions from the same embeddings.")
    b = basis.astype(X.dtype)
    return X - (X @ b.T) @ b


def vectors_for(words: Sequence[str], lookup) -> np.ndarray:
    """The vectors of ``words`` as a (len(words), d) float matrix, from ``lookup`` (``in`` and ``[]``).

    ``lookup`` is e.g. a dict word → vector or a gensim ``KeyedVectors``; words are looked up as given
    (the Bias-NLI pipeline lowercases them). All missing words are listed in one error.

    >>> vectors_for(["he", "she"], {"he": [1.0, 0.0], "she": [0.0, 1.0]}).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> vectors_for(["he", "they", "xe"], {"he": [1.0, 0.0]})
    Traceback (most recent call last):
    ...
    stereoprobe.errors.ProjectionError: 2 of 3 words are missing from the embeddings: 'they', 'xe'; add them to the embedding file or drop them from the word list (check the casing: words are looked up as given).
    """
    words = [words] if isinstance(words, str) else list(words)
    unique = list(dict.fromkeys(words))
    missing = [w for w in unique if w not in lookup]
    if missing:
        raise ProjectionError(f"{len(missing)} of {len(unique)} words are missing from the embeddings: "
                              f"{', '.join(map(repr, missing))}; add them to the embedding file or drop them from "
                              "the word list (check the casing: words are looked up as given).")
    if not words:
        raise ProjectionError("No words given; pass at least one word.")
    rows = [np.asarray(lookup[w], dtype=float).ravel() for w in words]
    dims = {r.size for r in rows}
    if len(dims) != 1:
        raise ProjectionError(f"The word vectors have different dimensions {sorted(dims)}; use one embedding table.")
    return _matrix(np.stack(rows), "Word vectors")


def gender_direction(vectors_or_lookup, he: str = "he", she: str = "she", method: str = "normalize_each") -> np.ndarray:
    """The he − she direction (unit vector; book appendix *Where the code and the paper differ*, Bias-NLI:
    gender direction).

    ``method="normalize_each"`` (default; the released BERT helper ``component()``):
    b = normalize(normalize(v_he) − normalize(v_she)); ``"raw"``: b = (v_he − v_she)/‖v_he − v_she‖.
    ``vectors_or_lookup`` is a word lookup (see :func:`vectors_for`) or the two vectors (v_he, v_she).

    >>> gender_direction({"he": [2.0, 0.0], "she": [0.0, 1.0]}).round(4).tolist()
    [0.7071, -0.7071]
    >>> gender_direction([[2.0, 0.0], [0.0, 1.0]], method="raw").round(4).tolist()
    [0.8944, -0.4472]
    """
    if method not in GENDER_METHODS:
        raise ProjectionError(f"Unknown method={method!r}; choose one of {', '.join(GENDER_METHODS)}.")
    if isinstance(vectors_or_lookup, (np.ndarray, list, tuple)):
        pair = _matrix(vectors_or_lookup, "The he/she vectors")
        if pair.shape[0] != 2:
            raise ProjectionError(f"Expected two vectors (he, she), got {pair.shape[0]}; pass a lookup or a pair.")
    else:
        pair = vectors_for([he, she], vectors_or_lookup)
    if method == "normalize_each":
        pair = unit_rows(pair)
    diff = pair[0] - pair[1]
    if not np.linalg.norm(diff) > 0:
        raise ProjectionError(f"The vectors of {he!r} and {she!r} are identical, so they define no direction.")
    return unit_rows(diff)[0]


def _signed(components: np.ndarray) -> np.ndarray:
    """Flip each row so that its largest-|value| entry is positive (a deterministic SVD sign)."""
    top = components[np.arange(len(components)), np.abs(components).argmax(axis=1)]
    return components * np.where(top < 0, -1.0, 1.0)[:, None]


def _singular(vectors, method: str, normalize_rows: bool) -> tuple[np.ndarray, np.ndarray]:
    if method not in SUBSPACE_METHODS:
        raise ProjectionError(f"Unknown method={method!r}; choose one of {', '.join(SUBSPACE_METHODS)}.")
    m = unit_rows(vectors) if normalize_rows else _matrix(vectors, "Word vectors")
    if method == "pca_centered":
        m = m - m.mean(axis=0)
    _, s, vt = np.linalg.svd(m, full_matrices=False)
    return s, vt


def subspace(vectors, k: int, method: str = "svd_uncentered", normalize_rows: bool = True) -> np.ndarray:
    """Top-k principal directions (k, d) of a (words, d) matrix of word vectors (book appendix *Where the
    code and the paper differ*, Bias-NLI: subspace recipe).

    Rows are unit-normalized first (``normalize_rows``); ``"svd_uncentered"`` takes the top-k right
    singular vectors of that matrix, ``"pca_centered"`` those of the column-centred matrix (= PCA
    components). Each direction's sign is fixed: its largest-|component| entry is positive.

    >>> subspace([[1.0, 0.1], [1.0, -0.1], [-3.0, 0.0]], k=1, normalize_rows=False).round(3).tolist()
    [[1.0, 0.0]]
    """
    if not (isinstance(k, (int, np.integer)) and k >= 1):
        raise ProjectionError(f"k={k!r} must be a positive integer (1 for nationality, 2 for religion).")
    rows = np.atleast_2d(np.asarray(vectors)).shape[0]
    if rows < k:
        raise ProjectionError(f"Only {rows} word vectors for k={k} components; pass at least {k} words.")
    s, vt = _singular(vectors, method, normalize_rows)
    if len(s) < k or not s[k - 1] > _RANK_TOL * s[0]:
        raise ProjectionError(f"The {rows} word vectors span fewer than k={k} directions ({method}); "
                              "pass more (or more varied) words, or a smaller k.")
    return _signed(vt[:k])


def pair_differences(pairs: Sequence[tuple[str, str]] = GENDERED_PAIRS, lookup=None) -> np.ndarray:
    """normalize(v_a) − normalize(v_b) for each pair (a, b): the paper's Gendered set for Table 7.

    >>> lookup = {"man": [1.0, 0.0], "woman": [0.0, 2.0]}
    >>> pair_differences([("man", "woman")], lookup).tolist()
    [[1.0, -1.0]]
    """
    if lookup is None:
        raise ProjectionError("pair_differences needs a word lookup; pass lookup=... (e.g. a dict word -> vector).")
    pairs = [tuple(p) for p in pairs]
    if not pairs or any(len(p) != 2 for p in pairs):
        raise ProjectionError("Pass pairs as a non-empty list of (word_a, word_b) tuples.")
    vec = unit_rows(vectors_for([w for p in pairs for w in p], lookup))
    return vec[0::2] - vec[1::2]


def principal_value_ratios(matrix, n: int = 3, method: str = "svd_uncentered",
                           normalize_rows: bool = False) -> np.ndarray:
    """σ₂/σ₁, σ₃/σ₁, …, σ_{n+1}/σ₁ of the rows of ``matrix`` (the paper's Table 7).

    Pass the 9 :func:`pair_differences` for Gendered, or unit-normalized word vectors
    (``normalize_rows=True``) for Demonyms (40) and Adherents (25). ``method`` as in :func:`subspace`.

    >>> principal_value_ratios(np.diag([4.0, 2.0, 1.0, 0.5])).tolist()
    [0.5, 0.25, 0.125]
    """
    s, _ = _singular(matrix, method, normalize_rows)
    if len(s) < n + 1:
        raise ProjectionError(f"Need at least {n + 1} rows and dimensions for {n} ratios, got {len(s)} singular values.")
    if not s[0] > 0:
        raise ProjectionError("The matrix is zero, so its singular values have no ratios; check the word vectors.")
    return s[1:n + 1] / s[0]


def abs_cosine(u, v) -> float:
    """|cos(u, v)|, the Table 7 "cosine" column (the sign of a singular vector is arbitrary).

    >>> round(abs_cosine([1.0, 0.0], [-2.0, 2.0]), 4)
    0.7071
    """
    a, b = unit_rows(np.vstack([np.ravel(u), np.ravel(v)]))
    return float(abs(a @ b))


def random_directions(dim: int, n: int = 8, seed: int = 0) -> np.ndarray:
    """n isotropic Gaussian unit vectors (n, dim); direction i uses ``numpy.random.default_rng(seed + i)``.

    The seeded default random control (seeds 0..7 for the paper's 8 controls; book appendix *Where the code
    and the paper differ*, Bias-NLI: random controls); a prefix of n is the same for every n.

    >>> r = random_directions(5, n=3, seed=0)
    >>> r.shape, np.allclose(np.linalg.norm(r, axis=1), 1), np.array_equal(r[:2], random_directions(5, 2, 0))
    ((3, 5), True, True)
    """
    if not (isinstance(dim, (int, np.integer)) and dim >= 1 and isinstance(n, (int, np.integer)) and n >= 1):
        raise ProjectionError(f"dim={dim!r} and n={n!r} must be positive integers.")
    return unit_rows([np.random.default_rng(seed + i).standard_normal(int(dim)) for i in range(n)])


def random_word_pc_directions(vectors, n: int = 8, seed: int = 1, words: int = 20) -> np.ndarray:
    """The authors' GloVe random control (``gen_random_bias.py --type random``): n directions (n, d).

    As the script: seed a legacy ``RandomState(seed)`` once; for each direction take the rows
    ``permutation(V)[:words]`` of the (V, d) embedding matrix ``vectors`` (in file order), fit sklearn's
    centred PCA and keep ``components_[0]`` (unit norm; its sign is sklearn's).

    >>> vecs = np.random.default_rng(0).standard_normal((50, 4))
    >>> r = random_word_pc_directions(vecs, n=2)
    >>> r.shape, np.allclose(np.linalg.norm(r, axis=1), 1)
    ((2, 4), True)
    """
    from sklearn.decomposition import PCA

    m = _matrix(vectors, "Embedding vectors")
    if m.shape[0] < words:
        raise ProjectionError(f"Only {m.shape[0]} vocabulary vectors for samples of {words} words; pass the full table.")
    rs = np.random.RandomState(seed)
    pca = PCA(n_components=min(words, m.shape[1]), svd_solver="full")
    return np.stack([pca.fit(m[rs.permutation(m.shape[0])[:words]]).components_[0] for _ in range(n)])


# -- torch side (fp32, autocast off) --------------------------------------------------------------------------
def project_tensor(x, basis):
    """x − (x bᵀ) b in fp32 with autocast off, returned in x's dtype."""
    import torch

    with torch.autocast(device_type=x.device.type, enabled=False):
        y = x.float()
        b = basis.to(device=y.device, dtype=torch.float32)
        y = y - (y @ b.T) @ b
    return y.to(x.dtype)


def basis_tensor(directions, dim: int | None):
    import torch

    basis = orthonormalize(directions)
    if dim is not None and dim != basis.shape[1]:
        raise ProjectionError(f"The module's outputs have dimension {dim} but the directions {basis.shape[1]}; "
                              "build the directions from this model.")
    return torch.as_tensor(basis, dtype=torch.float32)


def output_hook(fn):
    import torch

    def hook(_module, _args, output):
        if torch.is_tensor(output):
            return fn(output)
        if isinstance(output, tuple) and output and torch.is_tensor(output[0]):
            return (fn(output[0]),) + tuple(output[1:])
        raise ProjectionError(f"Cannot project a module output of type {type(output).__name__}; "
                              "hook a module that returns a tensor (or a tuple starting with one).")

    return hook


def projection_hook(module, directions):
    """Register a forward hook projecting ``module``'s output off ``directions``; returns the handle.

    For ``model.get_input_embeddings()`` this is the BERT-branch projection (``BertEncoder`` in
    ``bert_encoder.py`` on the authors' ``bert_debias`` branch): every word-piece embedding, [CLS]/[SEP]
    included, is projected *before* position/type embeddings and LayerNorm are added.
    Works during fine-tuning too (the projection is in the forward pass, not a one-off weight edit).
    Computed in float32 with autocast off (under bf16 autocast it would leave ≈ 0.5% of the component),
    returned in the output's dtype. ``handle.remove()`` undoes it; :func:`stereoprobe.nli.contextual.projected`
    wraps it in a context manager.
    """
    basis = basis_tensor(directions, getattr(module, "embedding_dim", None))
    return module.register_forward_hook(output_hook(lambda x: project_tensor(x, basis)))
