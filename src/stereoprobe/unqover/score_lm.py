"""UnQover on masked LMs (the authors' ``lm/predict.py``): the probability the LM gives each subject at the mask.

Input: ``paragraph + " " + question``, where the question holds the tokenizer's mask token in the
subject's place ("[MASK] was a detective."), as one segment with the standard special tokens; exactly one
mask per input. ``p`` = softmax over the whole vocabulary at the mask position.

* ``compat`` (the authors' ``lm/predict.py``): keep the top-10 tokens only; decode each to a string
  (spaces stripped, lower-cased; for ``*bert-base-uncased`` / ``*bert-large-uncased`` model names inner
  spaces removed too); a subject's score is the probability of the first top-10 entry equal to the
  lower-cased subject text, else 0. Gender (``he_she``, the authors' ``--use_he_she 1``): a female
  subject scores max(p_she, p_name), a male one max(p_he, p_name), with p_he/p_she also from the top 10.
* ``clean``: the probability of the subject's own token in its mid-sentence form (``Ġmary``, ``▁Mary``:
  every mask follows a space; :func:`stereoprobe.tokenization.word_tokens`), never truncated; no he/she
  substitution. A bare ``▁``/``Ġ`` piece the tokenizer leaves in front of the mask (a mask token without
  ``lstrip``) is dropped, so the mask stands for the whole space-prefixed piece.

Scores are stored like QA scores with start = end = p, so S = √(p·p) = p downstream (as in ``lm/predict.py``).
Every subject must be one token for the tokenizer: :func:`check_single_tokens` lists the offenders, and
:func:`check_subjects` does so for a model from its tokenizer alone, before any weights load. The subject
lists follow the tokenizer (:func:`lm_variant`): the authors' ``_bert`` lists for WordPiece, ``_roberta``
for byte-level BPE, and for other families the first of the two whose subjects are all single tokens.
:func:`lm_degeneracy` says when an LM's scores carry no signal at all.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..choices import MODES
from ..errors import StereoprobeError
from ..models import LoadedModel, load_tokenizer, mask_logits, mask_positions
from ..tokenization import describe_tokenizer, word_tokens
from .generate import DatasetSpec, subjects_of

TOPK = 10
_UNCASED_SPACE_MODELS = ("bert-base-uncased", "bert-large-uncased")
LM_VARIANTS = ("lm-bert", "lm-roberta")  # the authors' subject lists, tried in this order for other families


def subject_token_ids(tokenizer, texts: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """Each text's single token id in its mid-sentence form (after a space), and the texts that are not one token
    (or only the unknown token)."""
    ids, bad = {}, []
    for text in texts:
        pieces = word_tokens(tokenizer, text)
        if len(pieces) == 1 and pieces[0] != tokenizer.unk_token_id:
            ids[text] = pieces[0]
        else:
            bad.append(f"{text} ({len(pieces)} tokens: {' '.join(tokenizer.convert_ids_to_tokens(pieces))})")
    return ids, bad


def subject_texts(spec: DatasetSpec) -> list[str]:
    """Every subject of ``spec``: plain form and demonym (nationality LM templates ask for either)."""
    texts = [t for subjects in subjects_of(spec) for s in subjects for t in (s.name, s.demonym) if t]
    return list(dict.fromkeys(texts))


def check_single_tokens(spec: DatasetSpec, tokenizer) -> dict[str, int]:
    """Every subject of ``spec`` (plain form and demonym) as one token id; one error lists all offenders."""
    ids, bad = subject_token_ids(tokenizer, subject_texts(spec))
    if bad:
        family = describe_tokenizer(tokenizer).family
        raise StereoprobeError(
            f"{len(bad)} subject(s) of the {spec.dataset} {spec.variant} lists are not a single token for this "
            f"{family} tokenizer: {'; '.join(bad)}. Use the subject list of its family (variant lm-bert or "
            "lm-roberta) or remove them from a copy of the list."
        )
    return ids


def check_subjects(model: str, spec: DatasetSpec, *, smoke: bool = False) -> dict[str, int] | None:
    """:func:`check_single_tokens` for a model, from its tokenizer alone (``AutoTokenizer``; no weights load).
    None when the model has no local copy (loading it then says what to do)."""
    tok = load_tokenizer(model, smoke=smoke)
    return None if tok is None else check_single_tokens(spec, tok)


def lm_variant(tokenizer, spec: DatasetSpec) -> str:
    """The LM subject lists a tokenizer reads: ``lm-bert`` for WordPiece, ``lm-roberta`` for byte-level BPE (the
    authors' pairing in ``lm/predict.py``); for any other family the first of lm-bert, lm-roberta whose subjects of
    ``spec``'s dataset are all single tokens, else one error with the offenders of both."""
    family = describe_tokenizer(tokenizer).family
    if family in ("bert", "roberta"):
        return "lm-" + family
    bad = {}
    for variant in LM_VARIANTS:
        lists = dataclasses.replace(spec, variant=variant, newsqa=False, mask=None)
        bad[variant] = subject_token_ids(tokenizer, subject_texts(lists))[1]
        if not bad[variant]:
            return variant
    raise StereoprobeError(
        f"Neither UnQover LM subject list of {spec.dataset} is all single tokens for this {family} tokenizer: "
        + "; ".join(f"{v}: {len(b)} offender(s): {', '.join(b)}" for v, b in bad.items())
        + ". Remove them from a copy of a list, or use a model with a WordPiece or byte-level BPE tokenizer."
    )


def lm_spec(spec: DatasetSpec, tokenizer) -> DatasetSpec:
    """``spec`` as a masked LM with ``tokenizer`` reads it: its :func:`lm_variant`, no NewsQA header, the
    variant's mask string (the scorer puts the tokenizer's own mask token in its place)."""
    return dataclasses.replace(spec, variant=lm_variant(tokenizer, spec), newsqa=False, mask=None)


def lm_spec_for_model(model: str, spec: DatasetSpec, *, smoke: bool = False) -> DatasetSpec:
    """:func:`lm_spec` from the model's tokenizer alone; a model with no local copy falls back on its name (the
    authors' rule: ``roberta`` in the name reads the ``_roberta`` lists, anything else the ``_bert`` lists)."""
    tok = load_tokenizer(model, smoke=smoke)
    if tok is not None:
        return lm_spec(spec, tok)
    variant = "lm-roberta" if "roberta" in getattr(model, "name", model).lower() else "lm-bert"
    return dataclasses.replace(spec, variant=variant, newsqa=False, mask=None)


def lm_degeneracy(scores, vocab_size: int | None = None) -> str | None:
    """Why a masked LM's subject scores on the probe carry no signal, or None when they do.

    ``scores``: the per-example frame of :func:`~stereoprobe.unqover.score_qa.load_scores` (columns
    ``s1_pos, s2_pos, s1_neg, s2_neg``), the stored ``start1 … end2`` frame, or any array of scores.
    The first rule that holds is reported:

    1. every score is 0: no subject ever reaches the top 10 at the mask (``compat``), so δ, ε and every γ are 0;
    2. every score is the same (spread at most 1e-6 of the largest): predictions ignore the context;
    3. all scores positive and the largest at most twice the smallest: near-uniform, nothing moves them;
    4. (with ``vocab_size``) the largest score below 10 / vocab_size: no subject ever gets ten times the
       uniform probability, as for a random or collapsed LM (a trained one gives subjects named in the
       paragraph far more).

    >>> lm_degeneracy(np.zeros((3, 4))) is not None, lm_degeneracy(np.full((3, 4), 1 / 30522)) is not None
    (True, True)
    >>> lm_degeneracy(np.array([[0.2, 0.0, 1e-3, 0.05]])) is None
    True
    """
    columns = list(getattr(scores, "columns", ()))
    picked = [c for c in ("s1_pos", "s2_pos", "s1_neg", "s2_neg") if c in columns] or \
        [c for c in ("start1", "end1", "start2", "end2") if c in columns]
    values = np.asarray(scores[picked] if picked else scores, dtype=float).ravel()
    values = values[np.isfinite(values)]
    if not len(values):
        return None
    top, low = values.max(), values.min()
    if top == 0:
        return (f"every subject probability is 0 ({len(values):,} scores): no subject ever reaches the top {TOPK} "
                "at the mask, so the metrics are 0 by construction")
    if top - low <= 1e-6 * top:
        return f"every subject probability is the same ({top:.3g}): the LM's predictions ignore the context"
    if low > 0 and top <= 2 * low:
        return (f"subject probabilities are near-uniform ({low:.3g} to {top:.3g}, within a factor of 2): "
                "the LM's predictions barely depend on the context")
    if vocab_size and top < 10 / vocab_size:
        return (f"no subject probability reaches 10 / vocabulary size (largest {top:.3g}, uniform "
                f"{1 / vocab_size:.3g}): the LM predicts the subjects no better than chance")
    return None


@dataclass
class LMScorer:
    """Turns passes into subject probabilities at the mask with one loaded masked LM."""

    loaded: LoadedModel
    spec: DatasetSpec
    mode: str = "compat"
    batch_tokens: int | None = None
    precision: str = "auto"
    he_she: bool | None = None  # default: on for the gender dataset in compat mode (the authors' runs)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        from ..batching import batch_tokens_for

        self.batch_tokens = batch_tokens_for(self.loaded.model, self.batch_tokens)
        if self.mode not in MODES:
            raise StereoprobeError(f"Unknown mode {self.mode!r}; choose one of: {', '.join(MODES)}.")
        if not self.spec.variant.startswith("lm"):
            raise StereoprobeError(f"Masked-LM scoring needs an LM variant of the dataset (lm-bert or lm-roberta), "
                                   f"not {self.spec.variant!r}.")
        tok = self.loaded.tokenizer
        if tok.mask_token is None:
            raise StereoprobeError(f"{self.loaded.name!r} has no mask token; pass a masked language model.")
        self.ids = check_single_tokens(self.spec, tok)
        marker = describe_tokenizer(tok).word_initial_marker
        marker_id = tok.convert_tokens_to_ids(marker) if marker else None
        self._marker_id = marker_id if marker_id is not None and marker_id != tok.unk_token_id else None
        if self.he_she is None:
            self.he_she = self.spec.dataset == "gender" and self.mode == "compat"
        self.gender = {}
        if self.he_she:
            for subjects in subjects_of(self.spec):
                for s in subjects:
                    if s.cluster not in ("female", "male"):
                        raise StereoprobeError(f"Subject {s.name!r} is neither in a female nor a male list; "
                                               "the he/she rule needs gendered subjects.")
                    self.gender[s.name.lower()] = s.cluster
        path = self.loaded.path.rstrip("/")
        self._squash = any(path.endswith(m) for m in _UNCASED_SPACE_MODELS)

    def _decode(self, token_id: int) -> str:
        text = self._cache.get(token_id)
        if text is None:
            text = self.loaded.tokenizer.decode([token_id]).strip().lower()
            if self._squash:
                text = text.replace(" ", "")
            self._cache[token_id] = text
        return text

    def score(self, passes: Sequence[tuple[str, str, str, str]]) -> np.ndarray:
        """(n, 4) float32 array p1, p1, p2, p2 (start = end = p) for (context, question, ans1, ans2) passes."""
        import torch

        from ..batching import inference_context, padded_inputs, progress, to_device, token_budget_batches

        tok = self.loaded.tokenizer
        spec_mask = self.spec.mask_string or tok.mask_token
        texts = [f"{c} {q.replace(spec_mask, tok.mask_token)}" for c, q, _, _ in passes]
        enc = tok(texts, add_special_tokens=True)["input_ids"]
        if self.mode == "clean" and self._marker_id is not None:  # a bare "▁"/"Ġ" before the mask: the mask is the word
            mask_id, marker_id = tok.mask_token_id, self._marker_id
            enc = [[t for j, t in enumerate(e) if not (t == marker_id and j + 1 < len(e) and e[j + 1] == mask_id)]
                   for e in enc]
        lengths = np.array([len(e) for e in enc])
        mask_at = mask_positions(enc, tok.mask_token_id, texts, "UnQover LM inputs need exactly one.")
        model = self.loaded.model
        device = model.device
        out = np.zeros((len(passes), 4), dtype=np.float32)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        batches = list(token_budget_batches(lengths, self.batch_tokens, bucket=True))
        results = []  # on the device until every batch is queued: no host sync per batch
        with inference_context(device, self.precision):
            for batch in progress(batches, desc="batches", leave=False, disable=len(batches) < 20):
                inputs = padded_inputs(enc, batch, pad, device)
                keep = to_device(np.arange(len(batch)) * int(lengths[batch].max()) + mask_at[batch], device)
                probs = mask_logits(model, inputs["input_ids"], inputs["attention_mask"], keep).softmax(-1)
                if self.mode == "clean":  # (batch, 2): the two subjects' probabilities
                    cols = np.array([[self.ids[passes[i][2]], self.ids[passes[i][3]]] for i in batch], dtype=np.int64)
                    results.append(probs.gather(1, to_device(cols, device)))
                else:
                    results.append(probs.topk(TOPK, dim=-1))
        if not batches:
            return out
        order = np.concatenate(batches)
        if self.mode == "clean":
            p = torch.cat(results).cpu().numpy()
            out[order, 0] = out[order, 1] = p[:, 0]
            out[order, 2] = out[order, 3] = p[:, 1]
            return out
        top_p = torch.cat([r.values for r in results]).cpu().numpy()
        top_i = torch.cat([r.indices for r in results]).cpu().numpy()
        for r, i in enumerate(order):
            found = {}
            for p, t in zip(top_p[r], top_i[r]):
                found.setdefault(self._decode(int(t)), float(p))
            for k, slot in ((0, 2), (1, 3)):
                text = passes[i][slot]
                p = found.get(text.lower(), 0.0)
                if self.he_she:
                    pronoun = "she" if self.gender.get(text.lower()) == "female" else "he"
                    p = max(p, found.get(pronoun, 0.0))
                out[i, 2 * k] = out[i, 2 * k + 1] = p
        return out
