"""What the three lab families share: their WordPiece vocabulary and tokenizer, BERT configuration, optimiser
and update step, and how a trained model is saved.

The families are the extractive-QA lab (:mod:`stereoprobe.zoo.lab`, which also registers, builds and loads
every ``lab:`` model), the masked-LM lab (:mod:`stereoprobe.zoo.lab_mlm`) and the multiple-choice lab
(:mod:`stereoprobe.zoo.lab_mcq`); all three import this module, so none imports another's module to train.

>>> build_vocab(["nurse"])[:5], build_vocab(["nurse"])[-1]
(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], 'nurse')
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Sequence

from . import synthetic as syn

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


# ------------------------------------------------------------------------------------------------ tokenizer


def build_vocab(words: Sequence[str] | None = None) -> list[str]:
    """Special tokens, ASCII punctuation, digits/letters (and their ``##`` pieces), then whole ``words``
    (default: the QA lab's, :func:`stereoprobe.zoo.synthetic.vocabulary_words`)."""
    chars = list(string.punctuation) + list(string.digits) + list(string.ascii_lowercase)
    pieces = ["##" + c for c in string.digits + string.ascii_lowercase]
    vocab: list[str] = []
    for tok in [*SPECIAL_TOKENS, *chars, *pieces, *(syn.vocabulary_words() if words is None else words)]:
        if tok not in vocab:
            vocab.append(tok)
    return vocab


def build_tokenizer(max_length: int = 128, words: Sequence[str] | None = None):
    """A lower-casing WordPiece ``BertTokenizer`` (tokenizers backend) over :func:`build_vocab`."""
    from transformers import BertTokenizerFast

    vocab = {tok: i for i, tok in enumerate(build_vocab(words))}
    return BertTokenizerFast(vocab=vocab, do_lower_case=True, model_max_length=max_length)


# ------------------------------------------------------------------------------------------------ training


def bert_config(recipe, tokenizer):
    """The ``BertConfig`` of a lab recipe (QA or masked LM): the recipe's size knobs over ``tokenizer``."""
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(tokenizer), hidden_size=recipe.hidden_size, num_hidden_layers=recipe.num_layers,
        num_attention_heads=recipe.num_heads, intermediate_size=recipe.intermediate_size,
        hidden_dropout_prob=recipe.dropout, attention_probs_dropout_prob=recipe.dropout,
        max_position_embeddings=recipe.max_position_embeddings, type_vocab_size=2,
        pad_token_id=tokenizer.pad_token_id, initializer_range=recipe.initializer_range,
    )


def optimizer(model, recipe):
    """AdamW (no weight decay on biases and LayerNorms) with linear warm-up and linear decay to 0."""
    import torch

    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "LayerNorm" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "LayerNorm" not in n)]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": recipe.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=recipe.lr,
    )
    warmup = max(1, int(recipe.warmup_fraction * recipe.steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (recipe.steps - s) / max(1, recipe.steps - warmup)))
    )
    return opt, sched


def optimizer_step(loss, model, opt, sched, losses: list[float], bar, step: int) -> None:
    """One update of every lab recipe: backward, clip the gradient norm at 1, step, and show the running loss."""
    import torch

    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    losses.append(loss.item())
    if step % 50 == 0:
        bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}")


def save_quietly(model, tokenizer, folder: Path, progress: bool, words: Sequence[str] | None = None) -> None:
    """Save model and tokenizer (and the plain ``vocab.txt``) as a HuggingFace folder, without HF's
    progress bars when ``progress`` is off."""
    from ..batching import quiet_transformers

    with quiet_transformers(progress):
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    (folder / "vocab.txt").write_text("\n".join(build_vocab(words)) + "\n", encoding="utf-8")
