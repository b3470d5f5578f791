"""The four fine-tuning tasks of the offline zoo: data, batches, loss and held-out evaluation per head.

Each task turns its corpus (built by :mod:`.wordnet`, :mod:`.qa_corpus`, :mod:`.nli_corpus`,
:mod:`.mcq_corpus`) into tensors exactly the way the probes will later feed the model:

* **mlm**: BERT masking (15 %, 80/10/10), the loss computed at the masked positions only (the vocabulary
  projection, tied to the word embeddings, is as costly as the encoder; computing it for 15 % of the
  tokens halves the step time). Evaluation: top-1/top-10 accuracy of the original token at the masked
  positions of held-out sentences (masking seeded, so the number is reproducible).
* **qa**: ``[CLS] question [SEP] paragraph [SEP]``; half of the batches carry the standard
  ``token_type_ids`` and half carry none, because the UnQover scorer's *compat* mode (the authors' code)
  feeds no token types and its *clean* mode feeds the standard ones — the model must answer under both.
  Evaluation: exact match of the best span (end ≥ start, ≤ 30 tokens, inside the paragraph).
* **nli**: ``[CLS] premise [SEP] hypothesis [SEP]``, labels ``entailment/neutral/contradiction`` (ids
  0/1/2, written to ``config.id2label``); label smoothing keeps the probabilities graded. Evaluation:
  accuracy, and the mean probability of the predicted class (how saturated the model is).
* **mcq**: SODAPOP's encoding (the authors' ``utils.py``): three pairs ``(context + question, answer)`` with no separator
  between context and question, token types 0/1, at most 128 tokens. Evaluation: accuracy against
  the 1/3 chance level.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Sequence

NLI_LABELS = ("entailment", "neutral", "contradiction")

#: Plain fill-in probes shown on the MLM card: general knowledge and grammar, no people, no groups.
MLM_PROBES = (
    "The capital of France is [MASK].",
    "The opposite of hot is [MASK].",
    "A dog is a domestic [MASK].",
    "She drank a cup of hot [MASK].",
    "The sun rises in the [MASK].",
    "Water freezes at zero degrees [MASK].",
    "He played the [MASK] in the school orchestra.",
    "A triangle has three [MASK].",
    "The children went to [MASK] on Monday morning.",
    "Bees make [MASK].",
    "The plural of mouse is [MASK].",
    "They sailed across the [MASK] in a small boat.",
)


@dataclass
class Task:
    """What a head needs from its corpus: ``batch(tok, items, rng, max_length) -> dict`` of tensors,
    ``loss(model, batch) -> tensor`` and ``evaluate(model, tok, items, max_length) -> dict``."""

    head: str
    batch: Callable[..., dict]
    loss: Callable[[Any, dict], Any]
    evaluate: Callable[..., dict]


# ----------------------------------------------------------------------------------------------- MLM


def _mlm_collator(tok, seed: int):
    from transformers import DataCollatorForLanguageModeling

    return DataCollatorForLanguageModeling(tok, mlm_probability=0.15, seed=seed)


def mlm_batch(tok, items: Sequence[str], rng: random.Random, max_length: int) -> dict:
    collator = _mlm_collator(tok, rng.randrange(2**31))
    return dict(collator([tok(s, truncation=True, max_length=max_length) for s in items]))


def _mlm_logits_at_masks(model, batch: dict):
    """Logits at the positions with a label only (the encoder, then the head on those rows)."""
    core = _unwrap(model)
    hidden = core.bert(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).last_hidden_state
    keep = batch["labels"] != -100
    return core.cls(hidden[keep]), batch["labels"][keep]


def mlm_loss(model, batch: dict):
    import torch.nn.functional as F

    logits, labels = _mlm_logits_at_masks(model, batch)
    return F.cross_entropy(logits.float(), labels)


def mlm_evaluate(model, tok, items: Sequence[str], max_length: int = 64, batch_size: int = 128) -> dict:
    import torch

    collator = _mlm_collator(tok, 12345)
    top1 = top10 = n = 0
    with torch.inference_mode():
        for i in range(0, len(items), batch_size):
            batch = dict(collator([tok(s, truncation=True, max_length=max_length) for s in items[i:i + batch_size]]))
            # evaluation masks with [MASK] only (no 80/10/10 noise): the question a fill-in probe asks
            keep = batch["labels"] != -100
            batch["input_ids"] = torch.where(keep, tok.mask_token_id, batch["labels"].where(keep, batch["input_ids"]))
            logits, labels = _mlm_logits_at_masks(model, batch)
            top = logits.topk(10, dim=-1).indices
            top1 += int((top[:, 0] == labels).sum())
            top10 += int((top == labels[:, None]).any(-1).sum())
            n += len(labels)
    return {"top1": top1 / max(n, 1), "top10": top10 / max(n, 1), "masked_tokens": n, "sentences": len(items)}


def mlm_fills(model, tok, probes: Sequence[str] = MLM_PROBES, k: int = 5) -> dict[str, list[str]]:
    """Top-``k`` fills of each probe's ``[MASK]`` (the card's sanity check)."""
    import torch

    core = _unwrap(model)
    out = {}
    with torch.inference_mode():
        for probe in probes:
            enc = tok(probe.replace("[MASK]", tok.mask_token), return_tensors="pt")
            logits = core(**{k_: v for k_, v in enc.items() if k_ != "token_type_ids"}).logits[0]
            pos = int((enc["input_ids"][0] == tok.mask_token_id).nonzero()[0])
            out[probe] = tok.convert_ids_to_tokens(logits[pos].topk(k).indices.tolist())
    return out


# ------------------------------------------------------------------------------------------------ QA


def _qa_encode(tok, items, max_length: int):
    enc = tok([it.question for it in items], [it.context for it in items], truncation="only_second",
              max_length=max_length, padding=True, return_offsets_mapping=True, return_tensors="pt")
    starts, ends = [], []
    for row, it in enumerate(items):
        a0, a1 = it.answer_start, it.answer_start + len(it.answer)
        seq = enc.sequence_ids(row)
        s = e = None
        for j, (o0, o1) in enumerate(enc["offset_mapping"][row].tolist()):
            if seq[j] == 1 and o0 < o1 and o1 > a0 and o0 < a1:  # a paragraph token overlapping the answer
                s = j if s is None else s
                e = j
        if s is None:  # the answer was truncated away: point at [CLS]
            s = e = 0
        starts.append(s)
        ends.append(e)
    return enc, starts, ends


def qa_batch(tok, items, rng: random.Random, max_length: int) -> dict:
    import torch

    enc, starts, ends = _qa_encode(tok, items, max_length)
    batch = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"],
             "start_positions": torch.tensor(starts), "end_positions": torch.tensor(ends)}
    if rng.random() < 0.5 and "token_type_ids" in enc:
        batch["token_type_ids"] = enc["token_type_ids"]
    return batch


def qa_loss(model, batch: dict):
    return model(**batch).loss


def normalize_answer(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces.

    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    """
    text = re.sub(r"[^\w\s]", " ", text.lower())
    return " ".join(w for w in text.split() if w not in ("a", "an", "the"))


def qa_evaluate(model, tok, items, max_length: int = 256, batch_size: int = 64, max_answer_tokens: int = 30,
                token_types: bool = False) -> dict:
    """Held-out exact match (and token F1) of the best valid span, with or without token types."""
    import torch

    em = f1 = 0.0
    with torch.inference_mode():
        for i in range(0, len(items), batch_size):
            chunk = items[i:i + batch_size]
            enc, _, _ = _qa_encode(tok, chunk, max_length)
            inputs = {"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]}
            if token_types and "token_type_ids" in enc:
                inputs["token_type_ids"] = enc["token_type_ids"]
            out = model(**inputs)
            for row, it in enumerate(chunk):
                para = torch.tensor([s == 1 for s in enc.sequence_ids(row)])
                start = out.start_logits[row].masked_fill(~para, -1e9)
                end = out.end_logits[row].masked_fill(~para, -1e9)
                scores = start[:, None] + end[None, :]
                n = scores.shape[0]
                valid = torch.triu(torch.ones(n, n, dtype=torch.bool)) & ~torch.triu(
                    torch.ones(n, n, dtype=torch.bool), diagonal=max_answer_tokens)
                best = int(scores.masked_fill(~valid, -1e18).argmax())
                s, e = divmod(best, n)
                offsets = enc["offset_mapping"][row]
                pred = it.context[int(offsets[s][0]):int(offsets[e][1])]
                p, g = normalize_answer(pred).split(), normalize_answer(it.answer).split()
                em += float(p == g)
                common = sum(min(p.count(w), g.count(w)) for w in set(p))
                f1 += 0.0 if common == 0 else 2 * common / (len(p) + len(g))
    n = max(len(items), 1)
    return {"exact_match": em / n, "f1": f1 / n, "items": len(items)}


def qa_evaluate_both(model, tok, items, max_length: int = 256) -> dict:
    """EM without token types (the UnQover compat input) and with them (clean)."""
    plain = qa_evaluate(model, tok, items, max_length)
    typed = qa_evaluate(model, tok, items, max_length, token_types=True)
    return {"exact_match": plain["exact_match"], "f1": plain["f1"], "exact_match_token_types": typed["exact_match"],
            "items": plain["items"]}


# ----------------------------------------------------------------------------------------------- NLI


def nli_batch(tok, items, rng: random.Random, max_length: int) -> dict:
    import torch

    enc = tok([it.premise for it in items], [it.hypothesis for it in items], truncation=True,
              max_length=max_length, padding=True, return_tensors="pt")
    return dict(enc) | {"labels": torch.tensor([NLI_LABELS.index(it.label) for it in items])}


def _smoothed_loss(logits, labels, smoothing: float):
    import torch.nn.functional as F

    return F.cross_entropy(logits.float(), labels, label_smoothing=smoothing)


def make_nli_loss(smoothing: float) -> Callable:
    def loss(model, batch):
        labels = batch["labels"]
        logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits
        return _smoothed_loss(logits, labels, smoothing)

    return loss


def nli_evaluate(model, tok, items, max_length: int = 128, batch_size: int = 128) -> dict:
    import torch

    correct = 0
    conf = []
    per_label = {lab: [0, 0] for lab in NLI_LABELS}
    with torch.inference_mode():
        for i in range(0, len(items), batch_size):
            chunk = items[i:i + batch_size]
            batch = nli_batch(tok, chunk, random.Random(0), max_length)
            labels = batch.pop("labels")
            probs = model(**batch).logits.float().softmax(-1)
            pred = probs.argmax(-1)
            correct += int((pred == labels).sum())
            conf += probs.max(-1).values.tolist()
            for lab, p in zip(labels.tolist(), pred.tolist()):
                per_label[NLI_LABELS[lab]][0] += int(lab == p)
                per_label[NLI_LABELS[lab]][1] += 1
    n = max(len(items), 1)
    return {"accuracy": correct / n, "mean_confidence": sum(conf) / max(len(conf), 1),
            "accuracy_by_label": {k: v[0] / max(v[1], 1) for k, v in per_label.items()}, "items": len(items)}


# ----------------------------------------------------------------------------------------------- MCQ


def mcq_encode(tok, contexts, questions, choices, max_length: int = 128):
    """SODAPOP's MCQ encoding (the authors' ``utils.py``): ``(context + question, answer)`` per choice, shape (n, 3, L)."""
    firsts = [c + q for c, q in zip(contexts, questions) for _ in range(3)]
    seconds = [a for ch in choices for a in ch]
    enc = tok(firsts, seconds, truncation=True, max_length=max_length, padding=True, return_tensors="pt")
    return {k: v.view(len(contexts), 3, -1) for k, v in enc.items()}


def mcq_batch(tok, items, rng: random.Random, max_length: int) -> dict:
    import torch

    enc = mcq_encode(tok, [it.context for it in items], [it.question for it in items],
                     [it.choices for it in items], max_length)
    return enc | {"labels": torch.tensor([it.label for it in items])}


def mcq_loss(model, batch: dict):
    return model(**batch).loss


def mcq_evaluate(model, tok, items, max_length: int = 128, batch_size: int = 32) -> dict:
    import torch

    correct = 0
    with torch.inference_mode():
        for i in range(0, len(items), batch_size):
            batch = mcq_batch(tok, items[i:i + batch_size], random.Random(0), max_length)
            labels = batch.pop("labels")
            correct += int((model(**batch).logits.argmax(-1) == labels).sum())
    return {"accuracy": correct / max(len(items), 1), "chance": 1 / 3, "items": len(items)}


def _unwrap(model):
    """The transformers model inside a peft wrapper (or the model itself)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if get_base is not None else model


def task(head: str, *, label_smoothing: float = 0.0) -> Task:
    """The :class:`Task` of ``head`` (mlm, qa, nli, mcq)."""
    if head == "mlm":
        return Task("mlm", mlm_batch, mlm_loss, mlm_evaluate)
    if head == "qa":
        return Task("qa", qa_batch, qa_loss, qa_evaluate_both)
    if head == "nli":
        return Task("nli", nli_batch, make_nli_loss(label_smoothing), nli_evaluate)
    if head == "mcq":
        return Task("mcq", mcq_batch, mcq_loss, mcq_evaluate)
    raise ValueError(f"no zoo task for head {head!r}")
