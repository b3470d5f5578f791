"""Post-hoc debiasing of a multiple-choice model's encoder: INLP and SentenceDebias, as bias-bench applies them.

SODAPOP's debiased MCQ models (An et al., EACL 2023, §6) were made with **bias-bench** (Meade, Poole-Dayan,
Reddy, ACL 2022; github.com/McGill-NLP/bias-bench, MIT licence). Its two post-hoc methods act on the last
hidden states of the encoder, every token, *before* the pooler and the task head (bias-bench issue #9):

* **INLP** (Ravfogel, Elazar, Gonen, Twiton, Goldberg, "Null It Out", ACL 2020): train a linear classifier
  ``W`` for the protected attribute, project the data onto the null space of ``W``, repeat. After ``n``
  iterations ``P = I − P_R(W₁ + … + W_n)`` with ``P_R(A) = B Bᵀ`` for an orthonormal basis ``B`` of A's row
  space (Ben-Israel's intersection-of-null-spaces formula); the hook applies ``h ← P h``.
* **SentenceDebias** (Liang, Li, Zheng, Lim, Salakhutdinov, Morency, ACL 2020): embeddings ``e_ij`` of the
  counterfactual versions ``j`` of sentence ``i`` are L2-normalised, centred per tuple
  (``e_ij − mean_j e_ij``), and ``b`` is their first principal component; the hook applies
  ``h ← h − (h·b) b / (b·b)``.

:func:`debiased` registers that hook on ``model.base_model.encoder`` (``BertForMultipleChoice.bert.encoder``;
bias-bench has no multiple-choice wrappers). :func:`fit_debias` computes ``P`` or ``b`` from the
mean-pooled last-layer states of an encoder — the MCQ model's own (``encoder_source="self"``) or another one
(e.g. the pre-trained encoder; the paper does not say which one SODAPOP used: book appendix *Where the
code and the paper differ*, SODAPOP: debiased models) — and caches it.

**The attribute word lists** are bias-bench's ``data/bias_attribute_words.json``, copied unchanged to
``data/sodapop/bias_attribute_words.json`` (bias-bench's MIT licence; only the line endings changed, CRLF → LF):
57 gender pairs (male, female), 6 race triples, 6 religion triples.

**Substituted corpus.** bias-bench draws its sentences from ``wikipedia-2.5.txt`` (a Google-Drive file);
there is no network here, so this module uses the offline WordNet 3.1 sentences of
:func:`stereoprobe.corpora.wordnet.mlm_corpus` (34.9k usage examples and 117.8k templated definitional sentences,
152,662 in all; lower-cased, as bias-bench lower-cases). Limits: far fewer attribute sentences than
Wikipedia's 10,000 per class (female is the scarcest gender class; race is dominated by the colour senses
of "white"/"black" and by place names), a lexicographic register, and the stereotypes WordNet's glosses
carry. The Social IQa contexts are **not** used: 1,388 of their 1,464 sentences name the placeholder
"Bethany", the rest yield 30 gendered sentences (29 female, through Bethany's pronouns), and they would
overlap SODAPOP's probe contexts.

Faithful to bias-bench: whitespace words, sentences of ≥ 5 words, 10,000 per class, gender sentences with
both male and female words skipped, the random clipping of each sentence (an attribute sentence is cut
after a random position at or after its attribute word, a neutral one after 4…len words), INLP's splits
(70/30 then 70/30, the 30 % test part held out) and classifier (``LinearSVC(fit_intercept=False,
dual=False, random_state=0)``, 80 iterations, ``min_accuracy=0``), two-sided counterfactual tuples over
every pair/triple. Deviations: a word also matches with leading/trailing punctuation stripped (WordNet
sentences end in "."; bias-bench's ``split(" ")`` would miss "her."), and SentenceDebias keeps the last
partial batch that bias-bench drops. bias-bench unpacks each gender pair as (female, male) although the
file lists (male, female); the labels only name the tuple slots, so ``b`` is unaffected.

>>> sorted(attribute_words("race")[0])
['asian', 'black', 'caucasian']
>>> for t in counterfactual_tuples("gender", sentences=["He thanked his sister."]):
...     print(t)
('he thanked his brother.', 'he thanked his sister.')
('he thanked his sister.', 'she thanked his sister.')
('he thanked his sister.', 'he thanked her sister.')
"""

from __future__ import annotations

import hashlib
import json
import random
import string
import time
import warnings
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from ..atomic import atomic_file
from ..errors import ProjectionError
from ..paths import cache_dir, data_dir, missing_data_fix

METHODS = ("inlp", "sentence_debias")
KINDS = ("gender", "race", "religion")
#: INLP labels and their class values in bias-bench (male 1, female 0, neutral −1; attribute 1, neutral 0).
LABELS = {"gender": {"male": 1, "female": 0, "neutral": -1}, "binary": {"attribute": 1, "neutral": 0}}
#: Fewest sentences per label (INLP) or tuples (SentenceDebias) a fit accepts.
MIN_EXAMPLES = 10
_PUNCT = string.punctuation


# ------------------------------------------------------------------------------------------- word lists


def _check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ProjectionError(f"Unknown bias kind {kind!r}; pass one of {', '.join(KINDS)}.")
    return kind


@lru_cache(maxsize=None)
def _attribute_file(path: str) -> dict:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def attribute_words(kind: str) -> list[tuple[str, ...]]:
    """bias-bench's attribute words of ``kind``: gender (male, female) pairs, race/religion triples.

    >>> len(attribute_words("gender")), attribute_words("gender")[0]
    (57, ('actor', 'actress'))
    """
    path = data_dir() / "sodapop" / "bias_attribute_words.json"
    if not path.is_file():
        raise ProjectionError(f"{path} is missing; {missing_data_fix()}.")
    return [tuple(words) for words in _attribute_file(str(path))[_check_kind(kind)]]


@lru_cache(maxsize=1)
def corpus_sentences() -> tuple[str, ...]:
    """The offline corpus: every WordNet 3.1 sentence of :func:`~stereoprobe.corpora.wordnet.mlm_corpus`, lower-cased,
    sorted."""
    from ..corpora.wordnet import mlm_corpus

    train, heldout = mlm_corpus(n_heldout=0)
    return tuple(sorted({s.lower() for s in train + heldout}))


def _match(token: str, vocabulary: set[str] | dict[str, str]) -> str | None:
    """The attribute word ``token`` is (itself, or with surrounding punctuation stripped), else None."""
    if token in vocabulary:
        return token
    core = token.strip(_PUNCT)
    return core if core in vocabulary else None


def _swap(token: str, old: str, new: str) -> str:
    """``token`` with the word ``old`` (bare, or inside surrounding punctuation) replaced by ``new``."""
    if token == old:
        return new
    core = token.strip(_PUNCT)
    if core != old:
        return token
    start = token.index(core)
    return token[:start] + new + token[start + len(core):]


# ------------------------------------------------------------------------------------ attribute sentences


def attribute_sentences(kind: str = "gender", max_sentences: int = 10000, seed: int = 0,
                        sentences: Sequence[str] | None = None) -> dict[str, list[str]]:
    """INLP's training sentences, labelled as bias-bench's ``load_inlp_data`` labels them.

    gender → ``male`` / ``female`` / ``neutral`` (a sentence with words of both genders is skipped); race and
    religion → ``attribute`` / ``neutral``. Each sentence is lower-cased and split on whitespace; sentences of
    fewer than 5 words are skipped; the corpus (default :func:`corpus_sentences`) is shuffled with
    ``random.Random(seed)``, which also draws the clipping: an attribute sentence keeps its words up to a
    random position ``≥`` that of its (last found) attribute word, a neutral one its first ``randint(4, n)``
    words. At most ``max_sentences`` per label (bias-bench: 10,000).
    """
    words = attribute_words(kind)
    if kind == "gender":
        vocab = {w: "male" for w, _ in words} | {w: "female" for _, w in words}
        out: dict[str, list[str]] = {label: [] for label in LABELS["gender"]}
    else:
        vocab = {w: "attribute" for group in words for w in group}
        out = {label: [] for label in LABELS["binary"]}
    rng = random.Random(seed)
    pool = list(corpus_sentences() if sentences is None else sentences)
    rng.shuffle(pool)
    for sentence in pool:
        tokens = sentence.lower().split()
        if len(tokens) < 5:
            continue
        found = [(i, vocab[w]) for i, t in enumerate(tokens) if (w := _match(t, vocab)) is not None]
        labels = {label for _, label in found}
        if not labels:
            if len(out["neutral"]) < max_sentences:
                out["neutral"].append(" ".join(tokens[:rng.randint(4, len(tokens))]))
            continue
        if len(labels) > 1:
            continue
        (label,) = labels
        if len(out[label]) < max_sentences:
            idx = tokens.index(tokens[found[-1][0]])  # bias-bench: tokens.index(last matching token)
            out[label].append(" ".join(tokens[:rng.randint(idx, len(tokens)) + 1]))
    return out


def counterfactual_tuples(kind: str = "gender", max_tuples: int | None = None, seed: int = 0,
                          sentences: Sequence[str] | None = None) -> list[tuple[str, ...]]:
    """SentenceDebias's counterfactual tuples, two-sided as in bias-bench's ``sentence_debias`` data.

    For every pair (gender: male, female) or triple (race/religion) and every member ``w`` in the
    lower-cased sentence: one tuple whose slot ``j`` is the sentence with ``w`` replaced by the ``j``-th
    member (the sentence itself in ``w``'s slot). A sentence yields one tuple per member it contains, so
    "her" (paired with "him" and with "his") yields two. ``max_tuples`` keeps a ``random.Random(seed)``
    sample, in corpus order.
    """
    out: list[tuple[str, ...]] = []
    groups = attribute_words(kind)
    vocab = {w for group in groups for w in group}
    for sentence in (corpus_sentences() if sentences is None else sentences):
        text = sentence.lower().strip()
        tokens = text.split()
        present = {w for t in tokens if (w := _match(t, vocab)) is not None}
        for group in groups:
            for w in group:
                if w in present:
                    out.append(tuple(text if v == w else " ".join(_swap(t, w, v) for t in tokens) for v in group))
    if max_tuples is not None and max_tuples < len(out):
        keep = sorted(random.Random(seed).sample(range(len(out)), max_tuples))
        out = [out[i] for i in keep]
    return out


# ------------------------------------------------------------------------------------------- encoding


def encoder_module(model):
    """``model.base_model.encoder`` (``BertForMultipleChoice.bert.encoder``), the module the hook goes on."""
    import torch

    base = getattr(model, "base_model", model)
    encoder = getattr(base, "encoder", None)
    if not isinstance(encoder, torch.nn.Module):
        raise ProjectionError(f"{type(model).__name__} has no encoder submodule (model.base_model.encoder) to hook; "
                              "pass a BERT-style model such as BertForMultipleChoice or RobertaForMultipleChoice.")
    return encoder


def encode_mean_pooled(model, tokenizer, sentences: Sequence[str], batch_size: int = 64, device=None,
                       max_length: int = 128) -> np.ndarray:
    """(n, d) float32 mean-pooled last-layer states of the model's encoder (``model.base_model``).

    ``mean_t m_t h_t / Σ_t m_t`` over the attention mask ``m`` ([CLS] and [SEP] included, as bias-bench pools),
    computed in eval mode under ``torch.inference_mode`` in batches sorted by length. ``device`` (default:
    the model's own) moves the model there. Active :func:`debiased` hooks apply.
    """
    import torch

    from ..batching import padded_inputs, progress, resolve_device

    base = getattr(model, "base_model", model)
    if device is not None:
        model.to(resolve_device(device))
    dev = next(base.parameters()).device
    enc = tokenizer(list(sentences), truncation=True, max_length=max_length)
    ids, types = enc["input_ids"], enc.get("token_type_ids")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    order = np.argsort([len(x) for x in ids], kind="stable")
    out = np.zeros((len(ids), base.config.hidden_size), dtype=np.float32)
    was_training = base.training
    base.eval()
    try:
        with torch.inference_mode():
            for start in progress(range(0, len(order), batch_size), desc="encoding sentences"):
                batch = order[start:start + batch_size]
                x = padded_inputs(ids, batch, pad, dev, types=types)
                h = base(**x).last_hidden_state.float()
                m = x["attention_mask"].unsqueeze(-1).float()
                out[batch] = ((h * m).sum(1) / m.sum(1)).cpu().numpy()
    finally:
        base.train(was_training)
    return out


# ------------------------------------------------------------------------------------------------ INLP


def _inlp_splits(X: np.ndarray, y: np.ndarray, seed: int):
    """bias-bench's splits: 30 % test, then 30 % of the rest dev → (X_train, X_dev, X_test, y_train, y_dev, y_test)."""
    from sklearn.model_selection import train_test_split

    X_rest, X_test, y_rest, y_test = train_test_split(X, y, test_size=0.3, random_state=seed)
    X_train, X_dev, y_train, y_dev = train_test_split(X_rest, y_rest, test_size=0.3, random_state=seed)
    return X_train, X_dev, X_test, y_train, y_dev, y_test


def _svc():
    from sklearn.svm import LinearSVC

    return LinearSVC(fit_intercept=False, class_weight=None, dual=False, random_state=0)


def _rowspace_projection(W: np.ndarray) -> np.ndarray:
    """``P_R(W) = B Bᵀ``, ``B`` an orthonormal basis of W's row space (zero for W = 0)."""
    from scipy.linalg import orth

    if np.allclose(W, 0):
        return np.zeros((W.shape[1], W.shape[1]))
    basis = orth(W.T)
    return basis @ basis.T


def inlp_projection(X: np.ndarray, y: np.ndarray, n_iterations: int = 80, seed: int = 0, min_accuracy: float = 0.0,
                    callback: Callable[[int, float], None] | None = None) -> np.ndarray:
    """INLP (Ravfogel et al. 2020, Alg. 1) as bias-bench runs it; returns the (d, d) projection ``P``.

    The rows are split as :func:`_inlp_splits` (70/30, then 70/30 of the 70 %, ``random_state=seed``; the
    last 30 % is held out). Iteration ``i`` fits ``LinearSVC(fit_intercept=False, dual=False,
    random_state=0)`` on the projected training rows, scores it on the projected dev rows (``callback(i,
    accuracy)``), and — if the accuracy is ≥ ``min_accuracy`` — adds ``P_R(W_i)``; then
    ``P = I − P_R(Σ_i P_R(W_i))`` (autoregressive: the next classifier sees ``X Pᵀ``). ``P`` is a symmetric,
    idempotent projection of rank ``d − Σ rank W_i`` (3 classes remove 3 dimensions per iteration).
    ConvergenceWarnings of LinearSVC (default ``max_iter``, as in bias-bench) are silenced.
    """
    from sklearn.exceptions import ConvergenceWarning

    from ..batching import progress

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    if X.ndim != 2 or y.shape != (len(X),):
        raise ProjectionError(f"INLP needs X of shape (n, d) and y of shape (n,), got {X.shape} and {y.shape}.")
    if len(np.unique(y)) < 2 or len(X) < MIN_EXAMPLES:
        raise ProjectionError(f"INLP needs at least {MIN_EXAMPLES} rows of at least two labels, got {len(X)} rows "
                              f"with labels {sorted(np.unique(y).tolist())}; give it more attribute sentences.")
    X_train, X_dev, _, y_train, y_dev, _ = _inlp_splits(X, y, seed)
    d = X.shape[1]
    P = np.eye(d)
    rowspaces: list[np.ndarray] = []
    for i in progress(range(n_iterations), desc="INLP"):
        clf = _svc()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            clf.fit(X_train @ P, y_train)
        accuracy = float(clf.score(X_dev @ P, y_dev))
        if callback is not None:
            callback(i, accuracy)
        if accuracy < min_accuracy:
            continue
        rowspaces.append(_rowspace_projection(clf.coef_))
        P = np.eye(d) - _rowspace_projection(np.sum(rowspaces, axis=0))
    return P


# ------------------------------------------------------------------------------------- SentenceDebias


def _sentence_debias(tuples_embeddings) -> tuple[np.ndarray, float]:
    from sklearn.decomposition import PCA

    E = np.asarray(tuples_embeddings, dtype=np.float64)
    if E.ndim != 3 or E.shape[0] < 1 or E.shape[1] < 2:
        raise ProjectionError(f"SentenceDebias needs embeddings of shape (tuples, ≥ 2 versions, d), got {E.shape}.")
    norms = np.linalg.norm(E, axis=-1, keepdims=True)
    if not np.all(norms > 0):
        raise ProjectionError("A counterfactual sentence has a zero embedding, so it cannot be L2-normalised; "
                              "drop it or check the encoder.")
    E = E / norms
    Z = (E - E.mean(axis=1, keepdims=True)).reshape(-1, E.shape[-1])
    pca = PCA(n_components=1).fit(Z)
    return pca.components_[0], float(pca.explained_variance_ratio_[0])


def sentence_debias_direction(tuples_embeddings) -> np.ndarray:
    """SentenceDebias's bias direction (Liang et al. 2020, as bias-bench computes it): a unit vector ``b``.

    ``tuples_embeddings`` is (n, k, d): the k counterfactual versions of n sentences. Each embedding is
    L2-normalised, each tuple centred on its mean, and ``b`` is the first principal component
    (``sklearn.decomposition.PCA``) of the n·k centred rows.
    """
    return _sentence_debias(tuples_embeddings)[0]


# ----------------------------------------------------------------------------------------------- hook


class DebiasedEncoder:
    """A context manager that hooks ``model.base_model.encoder`` and projects its ``last_hidden_state``.

    ``P`` (INLP): ``h ← P h``; ``b`` (SentenceDebias): ``h ← h − (h·b) b / (b·b)`` — for every token, before
    the pooler, in fp32 with autocast off (returned in the states' dtype). For ``BertForMultipleChoice``
    the encoder sees the flattened (batch·choices, seq, d) states, which the projection (per row) does not
    care about. The hook is removed on exit, even after an error; outputs are then exactly as before.
    """

    def __init__(self, model, P=None, b=None):
        import torch

        self.encoder = encoder_module(model)
        if (P is None) == (b is None):
            raise ProjectionError("Pass exactly one of P (an INLP matrix) or b (a SentenceDebias direction).")
        array = np.asarray(P if P is not None else b, dtype=np.float64)
        d = getattr(getattr(model, "config", None), "hidden_size", None) or array.shape[-1]
        if P is not None and array.shape != (d, d):
            raise ProjectionError(f"P has shape {array.shape} but the encoder's hidden size is {d}; fit it on this model.")
        if b is not None and (array.shape != (d,) or not np.any(array)):
            raise ProjectionError(f"b has shape {array.shape} (or is zero) but the encoder's hidden size is {d}; "
                                  "pass a nonzero direction fitted on this model.")
        self.kind = "matrix" if P is not None else "direction"
        self.array = torch.as_tensor(array, dtype=torch.float32)
        self._handle = None

    def project(self, h):
        """The projected states (any leading shape, last dim d)."""
        import torch

        with torch.autocast(device_type=h.device.type, enabled=False):
            x = h.float()
            a = self.array.to(x.device)
            y = x @ a.T if self.kind == "matrix" else x - (x @ a)[..., None] * a / (a @ a)
        return y.to(h.dtype)

    def _hook(self, _module, _args, output):
        import torch

        if isinstance(output, tuple):
            return (self.project(output[0]),) + tuple(output[1:])
        if torch.is_tensor(getattr(output, "last_hidden_state", None)):
            output.last_hidden_state = self.project(output.last_hidden_state)  # ModelOutput: key and attribute
            return output
        raise ProjectionError(f"The encoder returned a {type(output).__name__} without last_hidden_state; "
                              "hook a transformers encoder that returns BaseModelOutput or a tuple.")

    def __enter__(self) -> "DebiasedEncoder":
        if self._handle is not None:
            raise ProjectionError("This DebiasedEncoder is already active; leave its with-block before re-entering.")
        self._handle = self.encoder.register_forward_hook(self._hook)
        return self

    def __exit__(self, *exc) -> None:
        self._handle.remove()
        self._handle = None


def debiased(model, P=None, b=None) -> DebiasedEncoder:
    """``with debiased(model, P=P):`` — the model's encoder output projected inside the block (see :class:`DebiasedEncoder`)."""
    return DebiasedEncoder(model, P=P, b=b)


# ------------------------------------------------------------------------------------------------ fit


@dataclass(frozen=True)
class DebiasFit:
    """A fitted post-hoc debiasing: ``array`` is P (d, d) for INLP or the unit b (d,) for SentenceDebias."""

    method: str
    kind: str
    array: np.ndarray
    diagnostics: dict
    key: str

    @property
    def P(self) -> np.ndarray | None:
        return self.array if self.method == "inlp" else None

    @property
    def b(self) -> np.ndarray | None:
        return self.array if self.method == "sentence_debias" else None

    def variant(self, name: str | None = None):
        """The same projection as a :class:`~stereoprobe.sodapop.score_mcq.Variant` (one-pass scoring)."""
        from .score_mcq import Variant

        return Variant(name or f"{self.method}-{self.kind}", "matrix" if self.method == "inlp" else "direction",
                       self.array)


def _digest(items) -> str:
    h = hashlib.sha256()
    for item in items:
        h.update(json.dumps(item).encode())
        h.update(b"\x1e")
    return h.hexdigest()[:16]


def fit_debias(model, tokenizer, method: str = "inlp", kind: str = "gender", *, fingerprint: str,
               encoder_source="self", cache: bool = True, n_iterations: int = 80, max_sentences: int = 10000,
               max_tuples: int | None = None, seed: int = 0, batch_size: int = 64, device=None,
               max_length: int = 128) -> DebiasFit:
    """Fit INLP's ``P`` or SentenceDebias's ``b`` for ``kind`` on the offline corpus; cached as ``.npy``.

    The states come from ``encoder_source``: ``"self"`` (the MCQ model's own fine-tuned encoder) or a
    ``(model, tokenizer)`` pair (e.g. the pre-trained encoder); ``fingerprint`` must identify *that* encoder
    (e.g. its :attr:`~stereoprobe.models.LoadedModel.fingerprint`). The cache key hashes the fingerprint,
    method, kind, parameters and the exact sentences; files go to ``cache_dir()/sodapop_debias/``.

    Diagnostics: INLP — sentences per label, split sizes, dev accuracy per iteration, the majority rates,
    the held-out test accuracy of a fresh classifier before and after ``P``, the rank removed (< 3 per
    iteration once a classifier has nothing left to learn); SentenceDebias — tuples, the explained-variance
    ratio of ``b``. Without an intercept the accuracy falls to chance, below the majority rate: on
    ``zoo:minilm-mcq`` (384-d), gender 0.95 → 0.32 (majority 0.47), race 0.95 → 0.49 (majority 0.71).
    """
    if method not in METHODS:
        raise ProjectionError(f"Unknown debiasing method {method!r}; pass one of {', '.join(METHODS)}.")
    _check_kind(kind)
    if isinstance(encoder_source, str) and encoder_source == "self":
        source, source_tok = model, tokenizer
    elif isinstance(encoder_source, tuple) and len(encoder_source) == 2:
        source, source_tok = encoder_source
    else:
        raise ProjectionError(f"encoder_source={encoder_source!r} is neither 'self' nor a (model, tokenizer) pair.")
    encoder_module(model)
    d_model = model.config.hidden_size
    if getattr(source, "config", None) is None or source.config.hidden_size != d_model:
        raise ProjectionError(f"The encoder_source model's hidden size differs from the MCQ model's ({d_model}); "
                              "fit on an encoder of the same architecture.")
    if method == "inlp":
        data = attribute_sentences(kind, max_sentences=max_sentences, seed=seed)
        few = {label: len(s) for label, s in data.items() if len(s) < MIN_EXAMPLES}
        if few:
            raise ProjectionError(f"Too few {kind} attribute sentences for INLP ({few}, need ≥ {MIN_EXAMPLES} per label); "
                                  "raise max_sentences.")
        corpus = _digest(s for label in data for s in data[label])
        params = {"n_iterations": n_iterations, "max_sentences": max_sentences}
    else:
        tuples = counterfactual_tuples(kind, max_tuples=max_tuples, seed=seed)
        if len(tuples) < MIN_EXAMPLES:
            raise ProjectionError(f"Too few {kind} counterfactual tuples for SentenceDebias ({len(tuples)}, need ≥ "
                                  f"{MIN_EXAMPLES}); raise max_tuples.")
        corpus = _digest(tuples)
        params = {"max_tuples": max_tuples}
    key = _digest([{"v": 1, "fingerprint": fingerprint, "method": method, "kind": kind, "seed": seed,
                    "max_length": max_length, "corpus": corpus, **params}])
    folder = cache_dir() / "sodapop_debias"
    stem = folder / f"{method}-{kind}-{key}"
    npy, meta = stem.with_suffix(".npy"), stem.with_suffix(".json")
    if cache and npy.is_file() and meta.is_file():
        return DebiasFit(method, kind, np.load(npy), json.loads(meta.read_text()), key)

    t0 = time.perf_counter()
    if method == "inlp":
        labels = LABELS["gender" if kind == "gender" else "binary"]
        X = encode_mean_pooled(source, source_tok, [s for label in labels for s in data[label]], batch_size, device,
                               max_length)
        y = np.concatenate([np.full(len(data[label]), value) for label, value in labels.items()])
        t1 = time.perf_counter()
        dev_accuracy: list[float] = []
        array = inlp_projection(X, y, n_iterations, seed, callback=lambda _i, acc: dev_accuracy.append(acc))
        X_train, X_dev, X_test, y_train, y_dev, y_test = _inlp_splits(X, y, seed)
        before, after = _svc().fit(X_train, y_train), _svc().fit(X_train @ array, y_train)
        diagnostics = {
            "n_sentences": {label: len(data[label]) for label in labels},
            "n_train": len(y_train), "n_dev": len(y_dev), "n_test": len(y_test),
            "dev_accuracy": dev_accuracy,
            "majority_dev": float(np.unique(y_dev, return_counts=True)[1].max() / len(y_dev)),
            "test_accuracy_before": float(before.score(X_test, y_test)),
            "test_accuracy_after": float(after.score(X_test @ array, y_test)),
            "majority_test": float(np.unique(y_test, return_counts=True)[1].max() / len(y_test)),
            "rank_removed": int(round(X.shape[1] - np.trace(array))),
        }
    else:
        k = len(tuples[0])
        flat = encode_mean_pooled(source, source_tok, [s for t in tuples for s in t], batch_size, device, max_length)
        t1 = time.perf_counter()
        array, ratio = _sentence_debias(flat.reshape(len(tuples), k, -1))
        diagnostics = {"n_tuples": len(tuples), "tuple_size": k, "explained_variance_ratio": ratio}
    diagnostics |= {"dim": int(d_model), "seconds_encode": round(t1 - t0, 2),
                    "seconds_fit": round(time.perf_counter() - t1, 2)}
    if cache:
        with atomic_file(meta) as f:
            f.write(json.dumps(diagnostics, indent=1))
        with atomic_file(npy, "wb") as f:  # last: a cached .npy always has its diagnostics
            np.save(f, array)
    return DebiasFit(method, kind, array, diagnostics, key)
