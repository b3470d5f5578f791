"""Projection debiasing of contextual encoders (Dev et al. 2020's ELMo and BERT experiments).

The operator is the one of :mod:`stereoprobe.nli.projection`, x′ = x − Σ (x·b_i) b_i, applied inside a
transformer's forward pass:

* **word-piece input** (the authors' ``bert_debias`` branch): :func:`word_piece_direction` is the he − she direction of
  the model's own input-embedding rows (the *first* word piece of each word; " he" for byte-level BPE and
  SentencePiece tokenizers, i.e. ``Ġhe`` / ``▁he``). :func:`projected` hooks ``get_input_embeddings()``
  so that every word-piece embedding ([CLS]/[SEP] included) is projected *before* the position/type
  embeddings and LayerNorm are added. Any scorer run inside the ``with`` block (e.g.
  :class:`~stereoprobe.nli.scoring.NLIScorer` on the same model object) scores the projected model:
  **proj@test**, and with :func:`random_controls` the **rand@test** controls. ``dynamic=True``
  recomputes b from the current he/she rows on every forward (the code's ``--dynamic_debias 1``).
* **proj@train/test**: the zoo variants ``zoo:minilm-nli-proj`` and ``zoo:minilm-nli-rand0`` … ``rand7``
  (:mod:`stereoprobe.zoo.recipes`) fine-tune with the same hook; their word embeddings are frozen, so the
  exported model carries the projection as the one-off edit :func:`project_input_embeddings_`.
* **static layer vs all layers** (the paper's ELMo question, asked of a transformer; book appendix *Where
  the code and the paper differ*, Bias-NLI: ELMo): :func:`projected_layers` projects either only the
  word-piece input (``layers="input"``) or the output of the embedding block and of every encoder layer,
  each with its own direction — the normalized difference of the mean contextual
  embeddings of "he" and "she" at that layer (:func:`layer_directions`). :func:`layer_diagnostics` tabulates
  per layer how stable the direction is and how much of the he/she difference each variant removes.

All hooks compute the projection in fp32 with autocast disabled: under the scorers' bf16 autocast on a GPU
the projection would otherwise be rounded to bf16 and leave ≈ 0.5 % of the component in place.

>>> parse_projection("random:3"), parse_projection("gender")
(('random', 3), ('gender', None))
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import ProjectionError
from .projection import basis_tensor, output_hook, project_tensor, gender_direction, orthonormalize, projection_hook, principal_value_ratios, random_directions, unit_rows

__all__ = [
    "DEFAULT_SENTENCES",
    "PROJECTION_CHOICES",
    "DynamicDirection",
    "LayerDirections",
    "parse_projection",
    "word_piece",
    "word_piece_direction",
    "random_controls",
    "projection_directions",
    "projected",
    "project_input_embeddings_",
    "layer_directions",
    "projected_layers",
    "layer_diagnostics",
    "test_time_projection",
]

#: What :func:`parse_projection` accepts (and the error lists).
PROJECTION_CHOICES = ("gender", "random:<seed>")
_RANDOM_RE = re.compile(r"^random:(0|[1-9]\d*)$")

#: Neutral sentences with a pronoun slot ``{}`` (mid-sentence, so cased tokenizers see the lowercase word):
#: the default contexts for the per-layer he/she directions.
DEFAULT_SENTENCES = (
    "Yesterday {} went to the market to buy some bread.",
    "I think {} is very good at this job.",
    "After the meeting {} walked home alone.",
    "Everyone agreed that {} had made the right decision.",
    "In the morning {} reads the newspaper on the train.",
    "The neighbours said that {} was friendly and quiet.",
    "When the phone rang, {} answered it at once.",
    "At the weekend {} likes to cook dinner for friends.",
    "Last year {} moved to a new city.",
    "Nobody knew why {} was late for the class.",
    "Before the exam {} studied all night.",
    "On Sundays {} plays football in the park.",
)


# ------------------------------------------------------------------------------------------ specs


def parse_projection(spec: str, *, allow_layers: bool = False) -> tuple[str, int | None]:
    """``"gender"`` → ``("gender", None)``; ``"random:<seed>"`` → ``("random", seed)``; with
    ``allow_layers`` also ``"layers:all"`` → ``("layers", None)``. Anything else is one
    :class:`ProjectionError` that lists the valid choices.

    >>> parse_projection("random:01")
    Traceback (most recent call last):
    ...
    stereoprobe.errors.ProjectionError: Unknown projection 'random:01'; valid choices: 'gender' (the he − she word-piece direction), 'random:<seed>' (a seeded Gaussian unit direction, seed a non-negative integer without leading zeros, e.g. 'random:0').
    """
    if isinstance(spec, str):
        if spec == "gender":
            return "gender", None
        m = _RANDOM_RE.match(spec)
        if m:
            return "random", int(m.group(1))
        if allow_layers and spec == "layers:all":
            return "layers", None
    choices = ["'gender' (the he − she word-piece direction)",
               "'random:<seed>' (a seeded Gaussian unit direction, seed a non-negative integer without leading zeros, "
               "e.g. 'random:0')"]
    if allow_layers:
        choices.append("'layers:all' (every layer with its own he − she direction)")
    raise ProjectionError(f"Unknown projection {spec!r}; valid choices: {', '.join(choices)}.")


def _torch_model(obj):
    """The torch model inside an NLIScorer / LoadedModel, or ``obj`` itself."""
    import torch

    if isinstance(obj, torch.nn.Module):
        return obj
    obj = getattr(obj, "loaded", obj)
    model = getattr(obj, "model", None)
    if not isinstance(model, torch.nn.Module):
        raise ProjectionError(f"Expected a torch model, a LoadedModel or an NLIScorer, got {type(obj).__name__}.")
    return model


def _tokenizer_of(obj, tokenizer=None):
    if tokenizer is not None:
        return tokenizer
    tok = getattr(getattr(obj, "loaded", obj), "tokenizer", None)
    if tok is None:
        raise ProjectionError("A he/she direction needs the model's tokenizer; pass tokenizer=... "
                              "(or a LoadedModel / NLIScorer, which carries one).")
    return tok


def _embedding_module(model):
    emb = _torch_model(model).get_input_embeddings()
    if emb is None or not hasattr(emb, "weight"):
        raise ProjectionError(f"{type(model).__name__} has no input-embedding matrix to project.")
    return emb


# ------------------------------------------------------------------------------------ directions


def word_piece(tokenizer, word: str) -> tuple[int, str]:
    """(id, piece) of the first word piece of ``word`` as it appears inside a sentence.

    ``" " + word`` is tokenized without special tokens, so byte-level BPE gives ``Ġhe`` and SentencePiece
    ``▁he`` (the in-sentence variants, the form a word takes after a space); WordPiece drops the space. A bare
    space marker piece (``▁`` alone) is skipped; an unknown-token piece is an error.
    """
    ids = tokenizer(" " + word, add_special_tokens=False)["input_ids"]
    for i, piece in zip(ids, tokenizer.convert_ids_to_tokens(ids)):
        if piece is not None and piece.strip(" \u0120\u2581"):
            if tokenizer.unk_token_id is not None and i == tokenizer.unk_token_id:
                raise ProjectionError(f"{word!r} is an unknown token ({piece}) for this tokenizer; it has no embedding row.")
            return int(i), piece
    raise ProjectionError(f"{word!r} tokenizes to no word piece ({tokenizer.convert_ids_to_tokens(ids)}).")


@dataclass(frozen=True)
class DynamicDirection:
    """The he − she direction recomputed from the *current* embedding rows on every forward pass
    (the ``bert_debias`` code's ``--dynamic_debias 1``; gradients flow through it, as there)."""

    he_id: int
    she_id: int
    pieces: tuple[str, str]
    method: str = "normalize_each"

    def current(self, weight):
        """(1, d) float32 unit direction from the rows of ``weight`` as they are now."""
        import torch

        he, she = weight[self.he_id].float(), weight[self.she_id].float()
        if self.method == "normalize_each":
            he, she = he / he.norm(), she / she.norm()
        d = he - she
        return (d / d.norm()).unsqueeze(0).to(torch.float32)


def word_piece_direction(model, tokenizer, he: str = "he", she: str = "she", dynamic: bool = False,
                         method: str = "normalize_each"):
    """The BERT-branch gender direction (the authors' ``get_bert_bias.py``) of ``model``'s input embeddings.

    b = normalize(normalize(e_he) − normalize(e_she)) for the rows of the first word piece of ``he`` and
    ``she`` (:func:`word_piece`); ``method="raw"`` drops the inner normalization. Returns a float64 unit
    vector (d,), or with ``dynamic=True`` a :class:`DynamicDirection` for :func:`projected`.
    """
    (he_id, he_piece), (she_id, she_piece) = word_piece(tokenizer, he), word_piece(tokenizer, she)
    if he_id == she_id:
        raise ProjectionError(f"{he!r} and {she!r} start with the same word piece {he_piece!r}; they define no direction.")
    if dynamic:
        if method not in ("normalize_each", "raw"):
            raise ProjectionError(f"Unknown method={method!r}; choose one of normalize_each, raw.")
        return DynamicDirection(he_id, she_id, (he_piece, she_piece), method)
    weight = _embedding_module(model).weight.detach()
    rows = weight[[he_id, she_id]].float().cpu().numpy()
    return gender_direction(rows, he=he, she=she, method=method)


def random_controls(model, n: int = 8, seed: int = 0) -> np.ndarray:
    """The rand@test controls: n seeded Gaussian unit directions (n, d) in ``model``'s embedding space
    (:func:`~stereoprobe.nli.projection.random_directions`; direction i is ``"random:<seed + i>"``)."""
    return random_directions(int(_embedding_module(model).weight.shape[1]), n, seed)


def projection_directions(model, tokenizer, spec) -> np.ndarray:
    """The (k, d) directions of a projection ``spec`` for ``model``: ``"gender"`` (:func:`word_piece_direction`),
    ``"random:<seed>"`` (row 0 of ``random_directions(d, 1, seed)`` = row ``seed`` of the rand@test set),
    or directions given as an array."""
    if not isinstance(spec, str):
        return np.atleast_2d(np.asarray(spec, dtype=float))
    kind, seed = parse_projection(spec)
    if kind == "gender":
        return word_piece_direction(model, _tokenizer_of(model, tokenizer))[None, :]
    return random_directions(int(_embedding_module(model).weight.shape[1]), 1, seed)


# ----------------------------------------------------------------------------------------- hooks


@contextlib.contextmanager
def projected(model, directions, *, tokenizer=None) -> Iterator[Any]:
    """Project ``directions`` out of every word-piece embedding of ``model`` inside the block.

    ``model``: a torch model, a :class:`~stereoprobe.models.LoadedModel` or an NLIScorer (the hook goes on
    the very model object the scorer uses). ``directions``: a (d,) or (k, d) array (orthonormalized here),
    a :class:`DynamicDirection`, or a spec string (``"gender"``, ``"random:<seed>"``; needs the tokenizer).
    Yields the (k, d) basis (or the DynamicDirection); the hook is removed on exit, even after an error.

    Scoring through :func:`~stereoprobe.nli.scoring.score_pairs` inside the block does *not* see the hook
    (it loads its own model instance); use :func:`stereoprobe.nli.scoring.load_probabilities` with ``projection=`` for stored scores.
    """
    emb = _embedding_module(model)
    if isinstance(directions, DynamicDirection):
        d = directions

        def dynamic(x):
            return project_tensor(x, d.current(emb.weight))

        handle = emb.register_forward_hook(output_hook(dynamic))
        yielded = directions
    else:
        if isinstance(directions, str):
            directions = projection_directions(model, _tokenizer_of(model, tokenizer), directions)
        yielded = orthonormalize(directions)
        if yielded.shape[1] != int(emb.weight.shape[1]):
            raise ProjectionError(f"The embeddings have dimension {int(emb.weight.shape[1])} but the directions "
                                  f"{yielded.shape[1]}; build the directions from this model.")
        handle = projection_hook(emb, yielded)
    try:
        yield yielded
    finally:
        handle.remove()


def project_input_embeddings_(model, directions):
    """Edit ``model``'s word-embedding matrix in place, E ← E − (E b) bᵀ (the matrix form of
    ``embedding_bias.py``'s projection); returns ``model``.

    For frozen embeddings this equals the forward hook of :func:`projected` (every looked-up row is a row
    of E); with trainable embeddings it does not (fine-tuning re-grows the component, which is why the
    authors' ``bert_encoder.py`` projects in the forward pass).
    Tied output embeddings (a masked-LM decoder) would change too, so use it on classifiers only.
    """
    import torch

    weight = _embedding_module(model).weight
    basis = basis_tensor(directions, int(weight.shape[1]))
    with torch.no_grad():
        weight.copy_(project_tensor(weight.detach(), basis))
    return model


# ------------------------------------------------------------------------------- layer directions


def _layer_modules(model) -> list:
    """[embedding block, encoder layer 1, …, layer N]: the modules whose outputs are hidden_states[0..N]."""
    base = getattr(_torch_model(model), "base_model", _torch_model(model))
    emb = getattr(base, "embeddings", None)
    encoder = getattr(base, "encoder", None)
    encoder = getattr(base, "transformer", None) if encoder is None else encoder
    layers = getattr(encoder, "layer", None)
    if emb is None or layers is None:
        raise ProjectionError(f"{type(model).__name__} has no embeddings + encoder.layer structure (BERT, RoBERTa, "
                              "DeBERTa, DistilBERT); per-layer projection is not supported for it.")
    return [emb, *layers]


@dataclass
class LayerDirections:
    """Per-layer he/she statistics of a model; layer 0 is the embedding block's output, layer l ≥ 1 the
    output of encoder layer l (= ``hidden_states[l]``)."""

    he_means: np.ndarray  # (L+1, d)
    she_means: np.ndarray  # (L+1, d)
    pair_differences: np.ndarray | None  # (L+1, n_pairs, d): unit(he) − unit(she) per template, or None
    counts: tuple[int, int]  # occurrences of he, she

    @property
    def n_layers(self) -> int:
        return self.he_means.shape[0]

    @property
    def differences(self) -> np.ndarray:
        return self.he_means - self.she_means

    @property
    def directions(self) -> np.ndarray:
        """(L+1, d): normalize(mean_he − mean_she) per layer."""
        d = self.differences
        if (np.linalg.norm(d, axis=1) == 0).any():
            raise ProjectionError("The mean he and she embeddings coincide at some layer; they define no direction there.")
        return unit_rows(d)


def _occurrences(sentences: Sequence[str], he: str, she: str) -> tuple[list[str], list[tuple[int, int, int, int, int]]]:
    """Texts and (text, start, end, word 0=he/1=she, pair id or -1) occurrences."""
    texts, occ = [], []
    for k, s in enumerate(sentences):
        if "{}" in s:
            for w, word in enumerate((he, she)):
                start = s.index("{}")
                texts.append(s.replace("{}", word, 1))
                occ.append((len(texts) - 1, start, start + len(word), w, k))
        else:
            found = False
            for w, word in enumerate((he, she)):
                for m in re.finditer(rf"(?<!\w){re.escape(word)}(?!\w)", s, flags=re.IGNORECASE):
                    if not found:
                        texts.append(s)
                        found = True
                    occ.append((len(texts) - 1, m.start(), m.end(), w, -1))
    return texts, occ


def _hidden_states(model, tokenizer, texts: list[str], batch_size: int):
    """Yield (offsets, hidden_states as a list of (B, T, d) float32 CPU arrays) per batch."""
    import torch

    m = _torch_model(model)
    device = next(m.parameters()).device
    for i in range(0, len(texts), batch_size):
        enc = tokenizer(texts[i:i + batch_size], padding=True, truncation=True, return_offsets_mapping=True,
                        return_tensors="pt")
        offsets = enc.pop("offset_mapping").tolist()
        with torch.inference_mode():
            out = m(**{k: v.to(device) for k, v in enc.items()}, output_hidden_states=True)
        hidden = getattr(out, "hidden_states", None)
        if not hidden:
            raise ProjectionError(f"{type(m).__name__} returns no hidden_states; per-layer directions need them.")
        yield offsets, [h.float().cpu().numpy() for h in hidden]


def layer_directions(model, tokenizer, sentences: Sequence[str] | None = None, he: str = "he", she: str = "she",
                     batch_size: int = 32) -> LayerDirections:
    """Mean contextual embedding of ``he`` and ``she`` at every layer over ``sentences``.

    A sentence with a ``{}`` slot is filled with each word (a matched pair); any other sentence
    contributes every whole-word occurrence of either word (case-insensitive). Each occurrence is read at
    its first word piece. Default: :data:`DEFAULT_SENTENCES`. The model runs in eval mode (restored after).
    """
    if getattr(tokenizer, "is_fast", True) is False:
        raise ProjectionError("Per-layer directions need a fast tokenizer (character offsets).")
    texts, occ = _occurrences(list(sentences) if sentences is not None else DEFAULT_SENTENCES, he, she)
    counts = (sum(o[3] == 0 for o in occ), sum(o[3] == 1 for o in occ))
    if not counts[0] or not counts[1]:
        raise ProjectionError(f"The sentences contain {counts[0]} {he!r} and {counts[1]} {she!r}; pass sentences "
                              "with both words, or templates with a {} slot.")
    m = _torch_model(model)
    was_training = m.training
    m.eval()
    by_text: dict[int, list] = {}
    for o in occ:
        by_text.setdefault(o[0], []).append(o)
    rows: list[tuple[int, int, np.ndarray]] = []  # (word, pair id, (L+1, d))
    try:
        for b, (offsets, hidden) in enumerate(_hidden_states(m, tokenizer, texts, batch_size)):
            for row, offs in enumerate(offsets):
                t = b * batch_size + row
                for _, start, end, w, pair in by_text.get(t, []):
                    j = next((j for j, (o0, o1) in enumerate(offs) if o1 > o0 and o1 > start and o0 < end), None)
                    if j is None:
                        raise ProjectionError(f"No token covers {texts[t][start:end]!r} in {texts[t]!r} (truncated?).")
                    rows.append((w, pair, np.stack([h[row, j] for h in hidden])))
    finally:
        m.train(was_training)
    he_means = np.mean([r[2] for r in rows if r[0] == 0], axis=0)
    she_means = np.mean([r[2] for r in rows if r[0] == 1], axis=0)
    pairs: dict[int, dict[int, np.ndarray]] = {}
    for w, pair, v in rows:
        if pair >= 0:
            pairs.setdefault(pair, {})[w] = v
    diffs = None
    full = [p for p in pairs.values() if len(p) == 2]
    if full:
        he_v = np.stack([p[0] for p in full], axis=1)  # (L+1, n, d)
        she_v = np.stack([p[1] for p in full], axis=1)
        diffs = he_v / np.linalg.norm(he_v, axis=-1, keepdims=True) - she_v / np.linalg.norm(she_v, axis=-1, keepdims=True)
    return LayerDirections(he_means, she_means, diffs, counts)


def _layer_indices(layers, n: int) -> list[int]:
    if layers == "all":
        return list(range(n))
    if isinstance(layers, str) or not all(isinstance(i, (int, np.integer)) for i in layers):
        raise ProjectionError(f"layers={layers!r}: choose 'input' (word-piece embeddings only), 'all' (the embedding "
                              f"block and every encoder layer) or a list of layer indices 0..{n - 1}.")
    bad = [i for i in layers if not 0 <= i < n]
    if bad:
        raise ProjectionError(f"Layer indices {bad} are out of range; this model has layers 0..{n - 1} "
                              "(0 = the embedding block's output).")
    return sorted(set(int(i) for i in layers))


@contextlib.contextmanager
def projected_layers(model, tokenizer=None, layers="all", sentences: Sequence[str] | None = None, he: str = "he",
                     she: str = "she", directions: LayerDirections | None = None) -> Iterator[dict]:
    """Project a gender direction out of the "static layer" or out of every layer, inside the block.

    * ``layers="input"``: the word-piece input embeddings only, with :func:`word_piece_direction`
      (the BERT branch's operator; ELMo's "layer 1 only" analogue).
    * ``layers="all"``: the output of the embedding block (after LayerNorm) and of every encoder layer, each
      with its own direction from :func:`layer_directions` (``sentences``; or pass ``directions=`` estimated
      once). Directions come from the unprojected model, as ELMo's were from its unprojected layers.
      A list of layer indices projects only those.

    Hooks run before transformers' own output recorders, so ``output_hidden_states`` shows the projected
    states. Yields {layer: direction} ("input" as the key for the word-piece projection).
    """
    tok = _tokenizer_of(model, tokenizer)
    if layers == "input":
        b = word_piece_direction(model, tok, he, she)
        with projected(model, b):
            yield {"input": b}
        return
    modules = _layer_modules(model)
    chosen = _layer_indices(layers, len(modules))
    est = directions if directions is not None else layer_directions(model, tok, sentences, he, she)
    if est.n_layers != len(modules):
        raise ProjectionError(f"The directions cover {est.n_layers} layers but the model has {len(modules)}.")
    dirs = est.directions
    handles = []
    try:
        for i in chosen:
            basis = basis_tensor(dirs[i], None)
            handles.append(modules[i].register_forward_hook(output_hook(lambda x, b=basis: project_tensor(x, b)),
                                                            prepend=True))
        yield {i: dirs[i] for i in chosen}
    finally:
        for h in handles:
            h.remove()


def layer_diagnostics(model, tokenizer=None, sentences: Sequence[str] | None = None, he: str = "he",
                      she: str = "she"):
    """Per-layer diagnostics of the static-layer vs all-layer projection (a DataFrame, one row per layer).

    Columns: ``layer`` (0 = embedding block), ``name``; ``diff_norm`` = ‖mean_he − mean_she‖ and
    ``rel_diff`` (over the mean norm of the two means); ``cos_prev`` = cos(b_l, b_{l−1}) and
    ``cos_word_piece`` = cos(b_l, word-piece direction); ``sv2_sv1`` = σ₂/σ₁ of the per-template
    differences unit(he) − unit(she) (how one-dimensional gender is at that layer, as the paper's Table 12);
    ``removed_input`` / ``removed_all`` = 1 − ‖mean difference with the projection‖ / ‖without‖ when only
    the word-piece input is projected / when every layer is.
    """
    import pandas as pd

    tok = _tokenizer_of(model, tokenizer)
    base = layer_directions(model, tok, sentences, he, she)
    wp = word_piece_direction(model, tok, he, she)
    with projected(model, wp):
        inp = layer_directions(model, tok, sentences, he, she)
    with projected_layers(model, tok, "all", directions=base):
        allp = layer_directions(model, tok, sentences, he, she)
    dirs = base.directions
    norm = np.linalg.norm(base.differences, axis=1)
    scale = 0.5 * (np.linalg.norm(base.he_means, axis=1) + np.linalg.norm(base.she_means, axis=1))
    rows = []
    for layer in range(base.n_layers):
        ratio = np.nan
        if base.pair_differences is not None and base.pair_differences.shape[1] >= 2:
            ratio = float(principal_value_ratios(base.pair_differences[layer], n=1)[0])
        rows.append({
            "layer": layer, "name": "embeddings" if layer == 0 else f"layer {layer}",
            "diff_norm": float(norm[layer]),
            "rel_diff": float(norm[layer] / scale[layer]),
            "cos_prev": float(dirs[layer] @ dirs[layer - 1]) if layer else np.nan,
            "cos_word_piece": float(dirs[layer] @ wp),
            "sv2_sv1": ratio,
            "removed_input": float(1 - np.linalg.norm(inp.differences[layer]) / norm[layer]),
            "removed_all": float(1 - np.linalg.norm(allp.differences[layer]) / norm[layer]),
        })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------- stored scores


def test_time_projection(loaded, projection, sentences: Sequence[str] | None = None):
    """(context manager, store-mode suffix) that project ``loaded``'s model at test time.

    ``projection``: ``"gender"`` (proj@test), ``"random:<i>"`` (one rand@test control), ``"layers:all"``
    (every layer, :func:`projected_layers`, directions estimated on ``sentences``), or a (k, d) array of
    input directions. The suffix names a digest of the actual directions, so scores stored under it
    never mix with unprojected ones (:func:`stereoprobe.nli.scoring.score_pairs` uses both).
    """
    kind = parse_projection(projection, allow_layers=True)[0] if isinstance(projection, str) else "array"
    if kind == "layers":
        est = layer_directions(loaded.model, loaded.tokenizer, sentences)
        context = projected_layers(loaded.model, loaded.tokenizer, "all", directions=est)
        basis = est.directions
    else:
        basis = orthonormalize(projection_directions(loaded.model, loaded.tokenizer, projection))
        context = projected(loaded.model, basis)
    digest = hashlib.sha256(np.ascontiguousarray(basis, dtype=np.float32).round(6).tobytes()).hexdigest()[:12]
    return context, f"-proj{kind[0]}-{digest}"
