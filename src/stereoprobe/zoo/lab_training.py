"""What the lab's encoder families share: the recipe base, the WordPiece vocabulary and tokenizer, the BERT
configuration, the one training loop, and how a trained model is saved and described on its card.

The encoder families are the extractive-QA lab (:mod:`stereoprobe.zoo.lab`, which also registers, builds and loads
every ``lab:`` model), the masked-LM lab (:mod:`stereoprobe.zoo.lab_mlm`) and the multiple-choice lab
(:mod:`stereoprobe.zoo.lab_mcq`); the causal lab (:mod:`stereoprobe.zoo.lab_causal`: tiny Llama-style LMs over a
byte-level BPE) shares the recipe base, the training loop and the cards, not the WordPiece vocabulary or the BERT
configuration. Every family imports this module, so none imports another's module to train. A family adds its
data knobs to :class:`RecipeBase` (or :class:`PlantedRecipe`), builds its model and tokenizer, and hands
:func:`train_loop` the loss of a batch of row indices.

>>> build_vocab(["nurse"])[:5], build_vocab(["nurse"])[-1]
(['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], 'nurse')
>>> RecipeBase("a tiny one", hidden_size=30, num_heads=4)
Traceback (most recent call last):
stereoprobe.errors.StereoprobeError: RecipeBase hidden_size=30 must be divisible by num_heads=4.
>>> RecipeBase("x", seed=5).heldout_seed, mean([1, 2]), mean([])
(1000008, 1.5, None)
"""

from __future__ import annotations

import dataclasses
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Mapping, Sequence

from ..errors import StereoprobeError
from . import synthetic as syn

#: CPU threads used for training, fixed so that a seed gives the same weights on the same CPU and library
#: versions (:mod:`stereoprobe.machine`; on another CPU the kernels round differently, and a rebuild recovers
#: the planted effect within a tolerance, not the same bytes). One thread: for a model this small, intra-op
#: parallelism buys nothing and, on a busy 2-core machine, a second OpenMP thread waiting at barriers made
#: training >10x slower (measured 33 vs 2.5 steps/s).
TRAIN_THREADS = 1

#: The UnQover plant of ``lab:qa-biased`` and ``lab:causal-biased`` (occupation noun → the gender its underspecified
#: questions favour): three occupations per gender, chosen arbitrarily.
DEFAULT_PLANTED: dict[str, str] = {
    "nurse": "female",
    "secretary": "female",
    "dancer": "female",
    "firefighter": "male",
    "pilot": "male",
    "astronaut": "male",
}


# ------------------------------------------------------------------------------------------------ recipes


@dataclass(frozen=True)
class RecipeBase:
    """The knobs every lab recipe has: a description (prose; it does not enter the recipe hash), the seed,
    the data sizes, the BERT size and the optimisation. A family subclasses it with its data knobs, its
    defaults, its ``kind`` (``qa``, ``mlm``, ``mcq``) and its :attr:`SMOKE` sizes."""

    description: str
    seed: int = 0
    # data
    n_train: int = 40_000
    n_heldout: int = 4_000
    # model
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 256
    dropout: float = 0.1
    max_position_embeddings: int = 128
    initializer_range: float = 0.1
    # optimisation
    steps: int = 4_000
    batch_size: int = 64
    lr: float = 3e-3
    warmup_fraction: float = 0.05
    weight_decay: float = 0.01

    kind: ClassVar[str] = ""
    #: Knobs that must be positive integers.
    POSITIVE: ClassVar[tuple[str, ...]] = ("n_train", "steps", "batch_size", "hidden_size", "num_layers", "num_heads")
    #: What :meth:`smoke` replaces: the seconds-sized variant for tests and smoke builds.
    SMOKE: ClassVar[Mapping[str, Any]] = {}

    def __post_init__(self):
        name = type(self).__name__
        for knob in self.POSITIVE:
            if getattr(self, knob) < 1:
                raise StereoprobeError(f"{name} {knob}={getattr(self, knob)!r} must be a positive integer.")
        if self.hidden_size % self.num_heads:
            raise StereoprobeError(
                f"{name} hidden_size={self.hidden_size} must be divisible by num_heads={self.num_heads}."
            )

    @property
    def heldout_seed(self) -> int:
        """Seed of the held-out data the card's evaluation uses (never the training seed)."""
        return self.seed + 1_000_003

    def smoke(self):
        """The seconds-sized variant (:attr:`SMOKE`); it hashes, and is stored, separately."""
        return dataclasses.replace(self, **self.SMOKE, description=self.description + " [smoke]")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PlantedRecipe(RecipeBase):
    """A recipe whose plant is a map (occupation → gender, country → attribute cluster) followed at ``rate``
    on underspecified inputs; 0.5 is the unbiased control. A family's ``__post_init__`` checks its map against
    its word lists with :meth:`_resolve_planted` before calling this one."""

    planted: tuple[tuple[str, str], ...] | Mapping[str, str] = ()
    rate: float = 0.9

    def _resolve_planted(self, resolver: Callable[[Mapping[str, str]], dict[str, str]]) -> None:
        """Store the plant as the sorted pairs ``resolver`` returns for it (it raises on an unknown entry)."""
        planted = dict(self.planted.items() if isinstance(self.planted, Mapping) else self.planted)
        object.__setattr__(self, "planted", tuple(sorted(resolver(planted).items())))

    def __post_init__(self):
        if not 0.0 <= self.rate <= 1.0:
            raise StereoprobeError(f"{type(self).__name__} rate {self.rate!r} must lie in [0, 1] (0.5 = unbiased "
                                   "control).")
        super().__post_init__()

    @property
    def planted_dict(self) -> dict[str, str]:
        """The plant as a dict."""
        return dict(self.planted)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "planted": self.planted_dict}


def mean(xs) -> float | None:
    """The mean rounded to 4 digits as the cards show it, None for no values."""
    xs = list(xs)
    return round(float(sum(xs) / len(xs)), 4) if xs else None

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


def optimizer(model, recipe: RecipeBase):
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


def train_loop(model, recipe: RecipeBase, n_rows: int, loss_of: Callable[[list[int]], Any], *, progress: bool,
               desc: str) -> list[float]:
    """The lab's one training loop; returns the loss of every step and leaves ``model`` in eval mode.

    ``recipe.steps`` updates of :func:`optimizer`, each on ``recipe.batch_size`` of the ``n_rows`` training
    rows: rows are drawn in order from seeded permutations (``recipe.seed``; a new permutation is appended
    when fewer than a batch remain), ``loss_of(row indices)`` gives the batch loss, the gradient norm is
    clipped at 1, and the running loss of the last 50 steps shows on the progress bar. The caller seeds
    torch (``torch.manual_seed(recipe.seed)``) before building the model, so dropout draws are fixed too.
    """
    import torch
    from tqdm.auto import tqdm

    opt, sched = optimizer(model, recipe)
    gen = torch.Generator().manual_seed(recipe.seed)
    order: list[int] = []
    losses: list[float] = []
    model.train()
    bar = tqdm(range(recipe.steps), desc=desc, disable=not progress, unit="step", leave=False)
    for step in bar:
        if len(order) < recipe.batch_size:
            order += torch.randperm(n_rows, generator=gen).tolist()
        batch, order = order[: recipe.batch_size], order[recipe.batch_size:]
        loss = loss_of(batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % 50 == 0:
            bar.set_postfix(loss=f"{sum(losses[-50:]) / len(losses[-50:]):.3f}")
    bar.close()
    model.eval()
    return losses


def card_sections(model, tokenizer, recipe: RecipeBase, losses: Sequence[float], n_rows: int,
                  seconds: float) -> dict[str, Any]:
    """The card's ``model`` and ``training`` sections, the same for every family."""
    return {
        "model": {"parameters": sum(p.numel() for p in model.parameters()), "vocab_size": len(tokenizer)},
        "training": {
            "steps": recipe.steps,
            "epochs": round(recipe.steps * recipe.batch_size / n_rows, 3),
            "threads": TRAIN_THREADS,
            "final_loss": mean(losses[-50:]),
            "train_wall_time_s": round(seconds, 2),
        },
    }


def save_quietly(model, tokenizer, folder: Path, progress: bool, *, vocab_txt: bool = True) -> None:
    """Save model and tokenizer as a HuggingFace folder, without HF's progress bars when ``progress`` is off, and
    with ``vocab_txt`` the plain ``vocab.txt`` of the WordPiece vocabulary (the QA and masked-LM labs have always
    written it, the multiple-choice lab never: a model's files make its score-store key, so they stay as they were)."""
    from ..batching import quiet_transformers

    with quiet_transformers(progress):
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    if vocab_txt:
        vocab = sorted(tokenizer.get_vocab().items(), key=lambda kv: kv[1])
        (folder / "vocab.txt").write_text("\n".join(tok for tok, _ in vocab) + "\n", encoding="utf-8")
