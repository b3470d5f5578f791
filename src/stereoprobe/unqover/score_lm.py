"""UnQover on masked LMs (spec §2.2): the probability the LM gives each subject at the mask.

Input: ``paragraph + " " + question``, where the question holds the tokenizer's mask token in the
subject's place ("[MASK] was a detective."), as one segment with the standard special tokens; exactly one
mask per input. ``p`` = softmax over the whole vocabulary at the mask position.

* ``compat`` (the authors' ``lm/predict.py``): keep the top-10 tokens only; decode each to a string
  (spaces stripped, lower-cased; for ``*bert-base-uncased`` / ``*bert-large-uncased`` model names inner
  spaces removed too); a subject's score is the probability of the first top-10 entry equal to the
  lower-cased subject text, else 0. Gender (``he_she``, the authors' ``--use_he_she 1``): a female
  subject scores max(p_she, p_name), a male one max(p_he, p_name), with p_he/p_she also from the top 10.
* ``clean``: the probability of the subject's own token (for byte-level BPE the space-prefixed token,
  since every mask follows a space), never truncated; no he/she substitution.

Scores are stored like QA scores with start = end = p, so S = √(p·p) = p downstream (spec §2.2).
Every subject must be one token for the tokenizer: :func:`check_single_tokens` lists the offenders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from ..choices import MODES
from ..errors import StereoprobeError
from ..models import LoadedModel, mask_logits, tokenizer_family
from . import wordlists as wl
from .generate import DatasetSpec, _subjects

TOPK = 10
_UNCASED_SPACE_MODELS = ("bert-base-uncased", "bert-large-uncased")


def subject_token_ids(tokenizer, texts: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """Each text's single token id (RoBERTa: the space-prefixed form), and the texts that are not one token."""
    roberta = tokenizer_family(tokenizer) == "roberta"
    ids, bad = {}, []
    for text in texts:
        pieces = tokenizer((" " + text) if roberta else text, add_special_tokens=False)["input_ids"]
        if len(pieces) == 1:
            ids[text] = pieces[0]
        else:
            bad.append(f"{text} ({len(pieces)} tokens: {' '.join(tokenizer.convert_ids_to_tokens(pieces))})")
    return ids, bad


def check_single_tokens(spec: DatasetSpec, tokenizer) -> dict[str, int]:
    """Every subject of ``spec`` (plain form and demonym) as one token id; one error lists all offenders."""
    texts = []
    for subjects in _subjects(spec):
        for s in subjects:
            texts += [s.name] + ([s.demonym] if s.demonym else [])
    ids, bad = subject_token_ids(tokenizer, list(dict.fromkeys(texts)))
    if bad:
        raise StereoprobeError(
            f"{len(bad)} subject(s) of the {spec.dataset} {spec.variant} lists are not a single token for this "
            f"tokenizer: {'; '.join(bad)}. Use the subject list of its family (variant lm-bert or lm-roberta) "
            "or remove them from a copy of the list."
        )
    return ids


@dataclass
class LMScorer:
    """Turns passes into subject probabilities at the mask with one loaded masked LM."""

    loaded: LoadedModel
    spec: DatasetSpec
    mode: str = "compat"
    batch_tokens: int = 8192
    precision: str = "auto"
    he_she: bool | None = None  # default: on for the gender dataset in compat mode (the authors' runs)
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.mode not in MODES:
            raise StereoprobeError(f"Unknown mode {self.mode!r}; choose one of: compat, clean.")
        if not self.spec.variant.startswith("lm"):
            raise StereoprobeError(f"Masked-LM scoring needs an LM variant of the dataset (lm-bert or lm-roberta), "
                                   f"not {self.spec.variant!r}.")
        tok = self.loaded.tokenizer
        if tok.mask_token is None:
            raise StereoprobeError(f"{self.loaded.name!r} has no mask token; pass a masked language model.")
        self.ids = check_single_tokens(self.spec, tok)
        if self.he_she is None:
            self.he_she = self.spec.dataset == "gender" and self.mode == "compat"
        self.gender = {}
        if self.he_she:
            for subjects in _subjects(self.spec):
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

        from ..batching import inference_context, padded_inputs, progress, token_budget_batches

        tok = self.loaded.tokenizer
        spec_mask = self.spec.mask_string or tok.mask_token
        texts = [f"{c} {q.replace(spec_mask, tok.mask_token)}" for c, q, _, _ in passes]
        enc = tok(texts, add_special_tokens=True)["input_ids"]
        lengths = np.array([len(e) for e in enc])
        model = self.loaded.model
        device = model.device
        out = np.zeros((len(passes), 4), dtype=np.float32)
        pad = tok.pad_token_id if tok.pad_token_id is not None else 0
        batches = list(token_budget_batches(lengths, self.batch_tokens, bucket=True))
        with inference_context(device, self.precision):
            for batch in progress(batches, desc="batches", leave=False, disable=len(batches) < 20):
                inputs = padded_inputs(enc, batch, pad, device)
                ids_t = inputs["input_ids"]
                masks = ids_t == tok.mask_token_id
                per_row = masks.sum(1)
                if not bool((per_row == 1).all()):
                    r = int((per_row != 1).nonzero()[0])
                    raise StereoprobeError(f"Input {texts[batch[r]]!r} has {int(per_row[r])} mask tokens; "
                                           "UnQover LM inputs need exactly one.")
                logits = mask_logits(model, ids_t, inputs["attention_mask"], masks)
                probs = logits.float().softmax(-1)  # (batch, vocab), one row per input
                if self.mode == "clean":
                    for k, slot in ((0, 2), (1, 3)):
                        col = torch.tensor([self.ids[passes[i][slot]] for i in batch], device=device)
                        out[batch, 2 * k] = out[batch, 2 * k + 1] = probs.gather(1, col[:, None])[:, 0].cpu().numpy()
                    continue
                top_p, top_i = probs.topk(TOPK, dim=-1)
                top_p, top_i = top_p.cpu().numpy(), top_i.cpu().numpy()
                for r, i in enumerate(batch):
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
