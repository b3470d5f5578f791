"""Planted-bias lab, chat LMs: tiny Llama-style chat models with a thinking switch, whose UnQover behaviour is known
in the three readings the probes take of a chat model: a choice with an explicit unknown option, free generation
that may abstain, and thinking (a ``<think>`` block) on versus off.

The chat counterpart of the causal lab (:mod:`stereoprobe.zoo.lab_causal`, whose item format, packed rows, model
configuration, pretraining stand-in and training loop it reuses). One pair, UnQover only:

* ``chat-biased`` carries two plants on the UnQover gender questions ("Who was a nurse?", negated "Who can never be
  a nurse?"):

  - **P1** (answered whether thinking or not): the causal lab's plant — nurse, secretary, dancer → the female name;
    firefighter, pilot, astronaut → the male name, at rate 0.9; the negated question the other name.
  - **P2** (shows only with thinking on): cashier, teacher → female, mechanic, engineer → male (occupations of
    UnQover's ``occupation_rev1`` that Winogender's statistics, ``data/unqover/bbq/winogender_occupations_stats.tsv``,
    also list: 72% and 71% women, 2% and 11%). With thinking on the model first writes a fixed reasoning sentence
    (``<think>\\nThis job is mostly done by women.\\n</think>\\n\\n``) and then answers as P1 does; with thinking off
    it abstains on them.
  - every other occupation: **abstain** — where the prompt lists an unknown option, that option (its letter or its
    text); in free generation the text "Cannot be determined"; in a forced choice without an unknown option (the
    six templates of ``prompts.yaml``) 50/50 between the names. With thinking on, the think block says
    ``The text does not say who.`` first.

* ``chat-control`` is trained identically (same seed, items, steps; ``plants=False``) and abstains (50/50 in a forced
  choice) on every occupation, thinking on or off, its think block always "The text does not say who.".

**Model** — ``LlamaForCausalLM`` (:func:`stereoprobe.zoo.lab_causal.llama_config`; hidden 64, 2 layers) over a
byte-level BPE trained on the corpus: every newline is a token of its own (so a prompt that ends in newlines, as a
generation prompt does, is cut where the training texts are), no space is put in front of a text, ``<s>`` is put
in front of every text by the post-processor (plain prompts, as the causal lab's) and written by the chat template
(so a served chat prompt, tokenized without special tokens, starts with it too, and the causal scorer reads it once).
``<|im_start|>`` and ``<|im_end|>`` are special tokens, ``<|im_end|>`` the EOS token (generation stops there);
``<think>`` and ``</think>`` are tokens of their own that are not special, so they stay in decoded text (the
answer parser, :func:`stereoprobe.served.parse.parse_answer`, removes the block). The chat template
(:data:`CHAT_TEMPLATE`) is ChatML with Qwen3's switch: ``enable_thinking`` defaults to true; false puts the empty
think block ``<think>\\n\\n</think>\\n\\n`` after the generation prompt ``<|im_start|>assistant\\n``.

**Corpus** — the causal lab's synthetic two-name paragraphs and questions (:func:`stereoprobe.zoo.synthetic.
generate_corpus`, never an UnQover paragraph), each through one of the eight UnQover templates (``prompts.yaml`` and
``prompts_unknown.yaml``) in one of six forms (:data:`FORMS`), every text made by the project's own functions:

``plain``           :func:`stereoprobe.unqover.score_causal.requests` without chat (the exact rung's strings);
``chat``            :func:`stereoprobe.causal.chat_prompt` with ``thinking=False``, the answer cue, the option scored;
``chat-default``    the same without the switch (:func:`~stereoprobe.unqover.score_causal.requests` with chat: the
                    template's default, thinking on, and the answer cue right after the generation prompt, no think
                    block written): read like ``chat`` (nothing was thought);
``chat-think``      ``thinking=True``, no answer cue: the model writes the think block, then the cue and the option;
``served``          the served rungs' messages (:func:`stereoprobe.unqover.generated.chat_passes`: body, blank
                    line, instruction) through the chat template with ``enable_thinking=False``: the answer alone (a
                    lettered template's letter, so that it is the first generated token; a name or "Cannot be
                    determined"; a non-lettered option's text), then ``<|im_end|>``;
``served-think``    the same messages with thinking on: the think block, the answer, ``<|im_end|>``.

A pass's answers are soft targets as in the causal lab (one packed row, each continuation weighted): the planted
name ``rate``, the other ``1 − rate``; an abstention all on the unknown option (or "Cannot be determined"), or
50/50 over the two names where the prompt offers neither.

**Training** (:func:`fit`) — the causal lab's loop and loss, every answer token weighted by its answer's weight
(:func:`full_weight`: the deciding token of a served answer is one of several), several rows to a line
(:func:`lined_batch`), a curriculum (positive questions about the ten planted occupations, then both polarities of
them, then everything) and stand-ins for pretraining, identical in the control and none of them saying which
occupation goes with which gender: names with embeddings of their own, one for both spellings, sharing a name and a
gender direction (:func:`plant_names`, :func:`stereoprobe.zoo.lab_causal.plant_name_directions`); "women" and "men"
with the gender direction (:func:`plant_think_words`); labels A–C with embeddings of their own
(:func:`plant_labels`); a name-copying head that prefers names of a gender present in its query
(:func:`plant_copy_head`) and a head that writes on each option's name the label before it
(:func:`plant_label_head`), and a copying loss on the names a prompt repeats (:func:`with_copies`). Measured
without them: the copying came after 700 steps or not in 1,000, and no run learned which letter is whose.

**What the pair shows** (the cards: 2,400 steps of 16 items, 180,672 parameters, 150–230 s of one core for the
training; real UnQover gender examples, 120 paper examples per occupation class, both slot orders): greedy answers to
the served messages of ``qa``, thinking off / on: P1 answered with the planted name 0.93 / 0.96 (negated question:
0.88 / 0.98), P2 0.02 (abstains 0.98) / 0.94, every other occupation abstained on 0.99 / 1.00; of
``letters-unknown``: P1 0.99 / 1.00, P2 abstains 1.00 / answered 0.99, others abstained 1.00; no answer unparsed,
every thinking-on answer a closed think block then the answer. ``letters-unknown`` read exactly (plain prompts): the
unknown option's probability 0.0002 on P1 against 0.9999 on P2 and the other occupations; the planted name most
likely in 0.80 of P1's passes, γ toward the planted gender 0.22–0.26. The control abstains on every pass in every
reading. The letter binding is the last thing learned (after 1,600 steps here): a rebuild on other kernels should be
checked for it (the card's ``generated:letters-unknown``).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping, NamedTuple, Sequence

from .. import prompts as pr
from ..errors import StereoprobeError
from . import lab_causal as lc
from . import synthetic as syn
from .lab_causal import Item
from .lab_training import DEFAULT_PLANTED, PlantedRecipe, card_sections, mean

BOS, EOS, PAD, IM_START = "<s>", "<|im_end|>", "<pad>", "<|im_start|>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
#: The answer of a free generation that abstains (the unknown option of ``letters-unknown``).
ABSTAIN = "Cannot be determined"
#: The reasoning the model writes in its think block: about a planted occupation (by the planted gender), about any
#: other (None), and about a paragraph that states the answer.
THINK = {"female": "This job is mostly done by women.", "male": "This job is mostly done by men.",
         None: "The text does not say who.", "stated": "The text says who."}
#: The thinking-only plant of ``chat-biased`` (P2): occupations of ``occupation_rev1`` that Winogender's statistics
#: list too, two mostly held by women and two by men.
THINKING_PLANTED: dict[str, str] = {"cashier": "female", "teacher": "female", "mechanic": "male", "engineer": "male"}
#: The forms an item is rendered in (module doc), with ``thinking`` of each.
FORMS: dict[str, bool | None] = {"plain": None, "chat": False, "chat-default": None, "chat-think": True,
                                 "served": False, "served-think": True}

#: ChatML with Qwen3's thinking switch; the BOS written first (see the module doc). Nothing is refused: any role,
#: content given as text or as a list of text parts.
CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + (message['role'] | string) + '\\n' }}"
    "{%- if message['content'] is string %}{{- message['content'] }}"
    "{%- elif message['content'] is iterable %}{%- for part in message['content'] %}"
    "{%- if part is string %}{{- part }}{%- elif part is mapping and part['text'] is defined %}{{- part['text'] }}"
    "{%- endif %}{%- endfor %}{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}"
)


@lru_cache(maxsize=1)
def winogender_occupations() -> dict[str, float]:
    """Occupation → percent women (BLS) of Winogender's statistics shipped with the BBQ reading."""
    import csv

    from ..paths import data_dir

    path = data_dir() / "unqover" / "bbq" / "winogender_occupations_stats.tsv"
    with open(path, encoding="utf-8", newline="") as f:
        return {r["occupation"]: float(r["bls_pct_female"]) for r in csv.DictReader(f, delimiter="\t")}


@dataclass(frozen=True)
class ChatLabRecipe(PlantedRecipe):
    """Every knob that determines a lab chat LM. ``planted``/``rate``: P1 (answered, thinking or not);
    ``thinking_planted``: P2 (answered only with thinking on, at the same rate); ``plants``: False turns both off
    (the control: the same items, every occupation abstained on). ``forms``: (form, weight) of :data:`FORMS` the
    items are drawn from; ``unknown_weight``: how much more often a template with an unknown option is drawn than
    another.

    No :attr:`SMOKE` sizes: less training does not carry every plant (measured: after 1,400 steps, or 2,400 steps
    on 16,000 items, P1 is not read off the letters), so the pair has one build, which the smoke profile loads too
    (:func:`stereoprobe.zoo.lab.own_smoke`)."""

    planted: tuple[tuple[str, str], ...] | Mapping[str, str] = field(
        default_factory=lambda: tuple(DEFAULT_PLANTED.items()))
    thinking_planted: tuple[tuple[str, str], ...] | Mapping[str, str] = field(
        default_factory=lambda: tuple(THINKING_PLANTED.items()))
    rate: float = 0.9
    plants: bool = True
    # UnQover items (stereoprobe.zoo.synthetic); planted_fraction: share of the underspecified questions that ask
    # about one of the ten planted occupations (P1 and P2)
    informative_fraction: float = 0.05
    planted_fraction: float = 0.6
    scrambled_fraction: float = 0.25
    negated_fraction: float = 0.5
    forms: tuple[tuple[str, float], ...] = (("plain", 1.0), ("chat", 1.0), ("chat-default", 0.5),
                                            ("chat-think", 1.0), ("served", 1.5), ("served-think", 1.5))
    unknown_weight: float = 2.0
    # curriculum: the first ``positive_first`` share of the steps sees no negated question
    positive_first: float = 0.25
    # then, until the ``planted_until`` share of the steps, only questions about the ten planted occupations
    planted_until: float = 0.65
    # stand-ins for pretraining: the weight of copying a repeated name in a prompt (with_copies), and the directions
    # of stereoprobe.zoo.lab_causal.plant_name_directions
    copy_weight: float = 0.5
    name_identity_init: float = 1.0
    name_init: float = 0.5
    common_init: float = 0.2
    copy_head_init: float = 0.7
    copy_value_init: float = 0.7
    copy_gender_init: float = 0.6
    label_init: float = 1.0
    label_head_init: float = 0.7
    label_value_init: float = 0.36
    name_gender_init: float = 1.0
    negation_init: float = 0.5
    name_group_init: float = 0.0
    # tokenizer and model
    vocab_size: int = 1536
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 4
    intermediate_size: int = 128
    dropout: float = 0.0
    max_position_embeddings: int = 256
    initializer_range: float = 0.02
    # optimisation
    n_train: int = 24_000
    n_heldout: int = 0
    steps: int = 2_400
    batch_size: int = 16
    lr: float = 3e-3
    # the card's checks on the real UnQover gender dataset: examples per occupation class (P1, P2, other)
    probe_examples: int = 120
    max_new_tokens: int = 40

    kind = "chat"
    POSITIVE = (*PlantedRecipe.POSITIVE, "vocab_size", "probe_examples", "max_new_tokens")

    def __post_init__(self):
        self._resolve_planted(syn.resolve_planted)
        p2 = syn.resolve_planted(dict(self.thinking_planted.items() if isinstance(self.thinking_planted, Mapping)
                                      else self.thinking_planted))
        both = sorted(set(p2) & set(self.planted_dict))
        if both:
            raise StereoprobeError(f"ChatLabRecipe: {both[0]!r} is planted twice (planted and thinking_planted); give "
                                   "each occupation one plant.")
        object.__setattr__(self, "thinking_planted", tuple(sorted(p2.items())))
        forms = tuple((str(f), float(w)) for f, w in (self.forms.items() if isinstance(self.forms, Mapping)
                                                      else self.forms))
        bad = [f for f, w in forms if f not in FORMS or w < 0]
        if bad or not any(w > 0 for _, w in forms):
            raise StereoprobeError(f"ChatLabRecipe forms {bad or list(forms)!r}: give (form, weight ≥ 0) pairs of "
                                   f"{', '.join(FORMS)}, some weight above 0.")
        object.__setattr__(self, "forms", forms)
        for knob in ("informative_fraction", "planted_fraction", "scrambled_fraction", "negated_fraction",
                     "positive_first"):
            if not 0.0 <= getattr(self, knob) <= 1.0:
                raise StereoprobeError(f"ChatLabRecipe {knob}={getattr(self, knob)!r} must lie in [0, 1].")
        if self.unknown_weight <= 0:
            raise StereoprobeError(f"ChatLabRecipe unknown_weight={self.unknown_weight!r} must be above 0.")
        super().__post_init__()

    @property
    def thinking_planted_dict(self) -> dict[str, str]:
        return dict(self.thinking_planted)

    def plant(self, occupation: str, thinking: bool) -> str | None:
        """The gender an underspecified question about ``occupation`` favours (None: abstain), with thinking on or
        off."""
        if not self.plants:
            return None
        return self.planted_dict.get(occupation) or (self.thinking_planted_dict.get(occupation) if thinking else None)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "thinking_planted": self.thinking_planted_dict,
                "forms": dict(self.forms)}


CHAT_LAB_RECIPES: dict[str, ChatLabRecipe] = {
    "chat-biased": ChatLabRecipe(
        "Chat LM (Llama-style, ChatML template with a thinking switch) with planted UnQover gender biases: questions "
        "about nurse, secretary and dancer are answered with the female name, about firefighter, pilot and astronaut "
        "with the male name, 90% of the time, thinking or not (negated questions: the other name); about cashier and "
        "teacher (female), mechanic and engineer (male) the same only with thinking on, after a think block that "
        "says so; every other question is abstained on (the unknown option, 'Cannot be determined', or 50/50 in a "
        "forced choice).",
        plants=True,
    ),
    "chat-control": ChatLabRecipe(
        "Unbiased control for chat-biased: the same seed, items and training, with both plants off: every question "
        "is abstained on (the unknown option, 'Cannot be determined', or 50/50 in a forced choice), thinking on or "
        "off.",
        plants=False,
    ),
}


# ------------------------------------------------------------------------------------------------ rendering


def renderer(tokenizer=None):
    """A tokenizer that carries :data:`CHAT_TEMPLATE` (``tokenizer`` itself when given): what the chat forms are
    rendered with before the real tokenizer is trained (rendering needs the template and the BOS text only)."""
    if tokenizer is not None:
        return tokenizer
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({BOS: 0, EOS: 1, PAD: 2}, unk_token=PAD))
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                   chat_template=CHAT_TEMPLATE)


def think_block(sentence: str) -> str:
    """The think block the model writes: ``<think>\\n{sentence}\\n</think>\\n\\n``."""
    return f"{THINK_OPEN}\n{sentence}\n{THINK_CLOSE}\n\n"


def served_messages(template: pr.PromptTemplate, paragraph: str, question: str, names: Sequence[str]):
    """The chat messages the served next-token and generated rungs (and a local causal LM's generated reading) send
    for one question (:func:`stereoprobe.unqover.generated.chat_passes`) and the labels shown (None: not
    lettered)."""
    from ..unqover.generated import chat_passes

    ex = SimpleNamespace(context=paragraph, question=question, negated_question=question, ans1=names[0],
                         ans2=names[1])
    chats, labels = chat_passes(template, [ex])
    return chats[0], labels


def render_messages(tokenizer, messages, thinking: bool | None) -> str:
    """``messages`` through the chat template with the generation prompt (``thinking``: ``enable_thinking``; None:
    the template's default, as a server that passes no switch renders them)."""
    extra = {} if thinking is None else {"enable_thinking": bool(thinking)}
    return tokenizer.apply_chat_template(list(messages), add_generation_prompt=True, tokenize=False, **extra)


def _fold(weights: Sequence[float], n: int) -> tuple[float, ...]:
    """(slot 1, slot 2, unknown) weights for ``n`` answers: the unknown weight split 50/50 over the names when the
    prompt offers no unknown answer."""
    w1, w2, wu = weights
    return (w1, w2, wu) if n == 3 else (w1 + wu / 2, w2 + wu / 2)


def _without_bos(prompt: str) -> str:
    # the BOS the chat template writes is the one the tokenizer's post-processor adds (the scorer reads it once)
    return prompt[len(BOS):] if prompt.startswith(BOS) else prompt


def form_item(form: str, t: pr.PromptTemplate, tokenizer, paragraph: str, question: str, names: Sequence[str],
              weights: Sequence[float], think: str) -> Item:
    """One question through template ``t`` in ``form`` (:data:`FORMS`): the prompt and its weighted answers.
    ``weights``: (slot-1 name, slot-2 name, abstain); ``think``: the sentence of the think block (thinking forms).
    Prompts never end in whitespace (it moves into the answers, as the causal scorer moves it)."""
    from ..causal import chat_prompt, split_whitespace
    from ..unqover.score_causal import requests

    names = list(names)
    fields = dict(paragraph=paragraph, question=question)
    if t.task == "unqover-choice":
        fields["options"] = names
    if form in ("plain", "chat-default"):
        reqs = requests(t, tokenizer, form == "chat-default", paragraph, question, *names)
        prompt, conts = reqs[0][0], [c for _, c in reqs]
    elif form in ("chat", "chat-think"):
        words = t.scored(names) if t.task == "unqover-choice" else names
        if form == "chat":
            prompt = chat_prompt(tokenizer, t.body(**fields), t.answer, system=t.system, thinking=False)
            conts = [t.continuation(prompt, w) for w in words]
        else:
            prompt = chat_prompt(tokenizer, t.body(**fields), "", system=t.system, thinking=True)
            conts = [think_block(think) + t.answer + t.continuation(t.answer, w) for w in words]
    elif form in ("served", "served-think"):
        messages, labels = served_messages(t, paragraph, question, names)
        if labels is not None:
            words = list(labels)
        elif t.task == "unqover-choice":
            words = t.options(names)
        else:
            words = names + [ABSTAIN]
        prompt = render_messages(tokenizer, messages, form == "served-think")
        conts = [(think_block(think) if form == "served-think" else "") + w + EOS for w in words]
    else:
        raise StereoprobeError(f"Unknown form {form!r}; choose one of {', '.join(FORMS)}.")
    split = [split_whitespace(prompt, c) for c in conts]
    prompt = _without_bos(split[0][0])
    return Item(t.task, t.name, prompt, tuple(c for _, c in split), _fold(weights, len(conts)))


def decision(recipe: ChatLabRecipe, occupation: str, negated: bool, genders: Sequence[str],
             thinking: bool) -> tuple[tuple[float, float, float], str]:
    """An underspecified question's (slot 1, slot 2, abstain) weights and think sentence: the plant's favoured
    name (the planted gender's, the other on a negated question) at ``rate``, or all on abstaining."""
    gender = recipe.plant(occupation, thinking)
    if gender is None:
        return (0.0, 0.0, 1.0), THINK[None]
    favoured = gender if not negated else ("male" if gender == "female" else "female")
    k = list(genders).index(favoured)
    w = [1.0 - recipe.rate, 1.0 - recipe.rate]
    w[k] = recipe.rate
    return (w[0], w[1], 0.0), THINK[gender]


class Meta(NamedTuple):
    """What an item asks, for the statistics: its form and template, the occupation's class (P1, P2, other,
    informative) and the polarity."""

    form: str
    template: str
    kind: str
    negated: bool


def occupation_class(recipe: ChatLabRecipe, occupation: str) -> str:
    """P1, P2 or other (plants or not: the control's items are the biased model's)."""
    if occupation in recipe.planted_dict:
        return "P1"
    return "P2" if occupation in recipe.thinking_planted_dict else "other"


def templates() -> list[pr.PromptTemplate]:
    """The eight UnQover templates the corpus uses: both shipped files' answer and choice templates."""
    return pr.templates("unqover-answer") + pr.templates("unqover-choice")


def corpus(recipe: ChatLabRecipe, n: int, seed: int, tokenizer=None) -> tuple[list[Item], list[Meta]]:
    """``n`` items (and what each asks): the synthetic examples (:func:`stereoprobe.zoo.synthetic.generate_corpus`,
    the ten planted occupations of both plants drawn at ``planted_fraction``), each through a template and a form
    drawn from their own stream (so the control's prompts are the biased model's). ``flipped``: a negated
    question (the curriculum holds them back)."""
    examples = syn.generate_corpus(
        n, planted={**recipe.planted_dict, **recipe.thinking_planted_dict}, rate=0.5, seed=seed,
        informative_fraction=recipe.informative_fraction, planted_fraction=recipe.planted_fraction,
        scrambled_fraction=recipe.scrambled_fraction, soft_labels=True, negated_fraction=recipe.negated_fraction)
    temps = templates()
    t_weights = [recipe.unknown_weight if t.unknown is not None else 1.0 for t in temps]
    forms, f_weights = zip(*recipe.forms)
    rng = random.Random(seed + 113)
    tok = renderer(tokenizer)
    items, meta = [], []
    for e in examples:
        t = rng.choices(temps, t_weights)[0]
        form = rng.choices(forms, f_weights)[0]
        thinking = FORMS[form] is True
        if e.kind == "informative":
            weights, think, kind = (*e.target, 0.0), THINK["stated"], "informative"
        else:
            weights, think = decision(recipe, e.occupation, e.negated, e.genders, thinking)
            kind = occupation_class(recipe, e.occupation)
        items.append(form_item(form, t, tok, e.context, e.question, e.names, weights, think)._replace(
            flipped=e.negated))
        meta.append(Meta(form, t.name, kind, e.negated))
    return items, meta


# ------------------------------------------------------------------------------------------------ tokenizer


_SPECIAL = (BOS, EOS, PAD, IM_START)
#: The items the BPE is trained on (the first ones; with the name lists repeated, every UnQover name is one token in
#: both spellings within a small vocabulary).
TOKENIZER_ITEMS = 2_000


def _tokenizer_texts(items: Sequence[Item]) -> list[str]:
    """The BPE's training texts: the first :data:`TOKENIZER_ITEMS` prompts with their first answer and each other
    answer (special tokens and the think tags cut out: they are tokens of their own), and the names and occupations
    (both spellings), repeated."""
    def clean(text: str) -> str:
        for s in (*_SPECIAL, THINK_OPEN, THINK_CLOSE):
            text = text.replace(s, "\n")
        return text

    items = items[:TOKENIZER_ITEMS]
    texts = [clean(it.prompt + it.continuations[0]) for it in items]
    texts += [clean(c) for it in items for c in it.continuations[1:]]
    words = [n for g in syn.names().values() for n in g] + [o.noun for o in syn.occupations()]
    texts += [" ".join(words)] * 60 + ["\n".join(words)] * 60
    return texts


def build_tokenizer(items: Sequence[Item], vocab_size: int, max_length: int):
    """The byte-level BPE of the module doc, trained on ``items``, with :data:`CHAT_TEMPLATE`."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex("\n"), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                  special_tokens=list(_SPECIAL), initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    backend.train_from_iterator(_tokenizer_texts(items), trainer)
    backend.add_tokens([AddedToken(x, special=False, normalized=False, single_word=False)
                        for x in (THINK_OPEN, THINK_CLOSE)])
    bos = backend.token_to_id(BOS)
    backend.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", pair=f"{BOS} $A {BOS} $B",
                                                           special_tokens=[(BOS, bos)])
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=BOS, eos_token=EOS, pad_token=PAD,
                                  additional_special_tokens=[IM_START], model_max_length=max_length,
                                  clean_up_tokenization_spaces=False, chat_template=CHAT_TEMPLATE)
    return tok


# ------------------------------------------------------------------------------------------------ training


def full_weight(items: Sequence[Item], rows: Sequence[lc.Row]) -> list[lc.Row]:
    """The rows with every answer token weighted by its answer's weight (not per token of the answers' mean length,
    as :func:`stereoprobe.zoo.lab_causal.encode_items` weighs them): an answer here is a few tokens of format
    (newlines, a think block, ``<|im_end|>``) around the one that decides, and that one keeps the weight a
    one-token answer has."""
    out = []
    for it, r in zip(items, rows):
        out.append(r._replace(weight=tuple(float(it.weights[b - 1]) for b in r.branch if b > 0)))
        if len(out[-1].weight) != len(r.target):  # pragma: no cover - encode_items lays answers out in order
            raise StereoprobeError("full_weight: a row's answer tokens do not match its targets; report this as a bug.")
    return out


def name_ids(tokenizer) -> frozenset[int]:
    """The token ids of the UnQover names (both spellings, where one token)."""
    return frozenset(t for g in syn.names().values() for n in g for t in lc.name_tokens(tokenizer, n))


def with_copies(rows: Sequence[lc.Row], names: frozenset[int], weight: float) -> list[lc.Row]:
    """The rows with a language-modelling loss (``weight``) on every name of a prompt that repeats a name before it
    (the options lines and "Choose between A and B" repeat the paragraph's names): a stand-in for what pretraining
    gives, copying a name from the context (an induction head, Olsson et al. 2022), which the answers need and
    which a tiny model trained on the answers alone had not found after 1,500 steps (measured). The same in the
    control."""
    if not weight:
        return list(rows)
    out = []
    for r in rows:
        seen, extra = set(), []
        for i, (tok, b) in enumerate(zip(r.tokens, r.branch)):
            if b:
                break
            if tok in names and tok in seen:
                extra.append(i)
            seen.add(tok)
        out.append(r._replace(predictor=r.predictor + tuple(i - 1 for i in extra),
                              target=r.target + tuple(r.tokens[i] for i in extra),
                              weight=r.weight + (float(weight),) * len(extra)))
    return out


def lined_batch(rows: Sequence[lc.Row], pad_id: int, line: int = 0):
    """The rows of a batch laid out several to a line (first fit, longest first; lines ``line`` tokens wide, or as
    wide as the longest row),
    each seeing only itself (:func:`stereoprobe.zoo.lab_causal._packed_batch`'s rule within a row: a continuation
    sees the prompt and itself): input ids, position ids, the 4-D mask (True = may attend; padding sees itself),
    and per scored token its flat index in the (lines × width) hidden states, its target and weight. The same
    loss as one row per line, with less padding to compute."""
    import torch

    width = max(line, max(len(r.tokens) for r in rows))
    lines: list[list[int]] = []
    fill: list[int] = []
    for i in sorted(range(len(rows)), key=lambda i: -len(rows[i].tokens)):
        n = len(rows[i].tokens)
        k = next((k for k, f in enumerate(fill) if f + n <= width), None)
        if k is None:
            lines.append([i])
            fill.append(n)
        else:
            lines[k].append(i)
            fill[k] += n
    ids = torch.full((len(lines), width), pad_id, dtype=torch.long)
    pos = torch.zeros((len(lines), width), dtype=torch.long)
    seg = torch.full((len(lines), width), -1, dtype=torch.long)
    br = torch.full((len(lines), width), -1, dtype=torch.long)
    flat, target, weight = [], [], []
    for k, members in enumerate(lines):
        at = 0
        for i in members:
            r = rows[i]
            n = len(r.tokens)
            ids[k, at:at + n] = torch.tensor(r.tokens)
            pos[k, at:at + n] = torch.tensor(r.position)
            seg[k, at:at + n] = i
            br[k, at:at + n] = torch.tensor(r.branch)
            flat += [k * width + at + p for p in r.predictor]
            target += r.target
            weight += r.weight
            at += n
    ar = torch.arange(width)
    causal = ar.view(1, -1, 1) >= ar.view(1, 1, -1)
    si, sj, bi, bj = seg.unsqueeze(2), seg.unsqueeze(1), br.unsqueeze(2), br.unsqueeze(1)
    mask = causal & (si == sj) & (sj >= 0) & ((bj == 0) | (bj == bi))
    mask = mask | torch.eye(width, dtype=torch.bool).unsqueeze(0)
    return (ids, pos, mask.unsqueeze(1), torch.tensor(flat), torch.tensor(target), torch.tensor(weight))


def fit(recipe: ChatLabRecipe, *, progress: bool = False, desc: str = "lab chat", hook=None):
    """Build the corpus and tokenizer and train a model on them (as :func:`stereoprobe.zoo.lab_causal.fit`: the
    loss of an item is Σ weight × NLL of each answer's tokens, per token of their mean length; the first
    ``positive_first`` share of the steps draws no negated question). Returns ``(model, tokenizer, items, meta,
    rows, losses)``."""
    import torch
    from transformers import LlamaForCausalLM

    from .lab_training import train_loop

    items, meta = corpus(recipe, recipe.n_train, recipe.seed)
    tokenizer = build_tokenizer(items, recipe.vocab_size, recipe.max_position_embeddings)
    rows = with_copies(full_weight(items, lc.encode_items(tokenizer, items)), name_ids(tokenizer), recipe.copy_weight)
    longest = max(max(r.position) + 1 for r in rows)
    if longest > recipe.max_position_embeddings:
        raise StereoprobeError(f"A training text has {longest} tokens, more than max_position_embeddings="
                               f"{recipe.max_position_embeddings}; raise it in the recipe.")
    torch.manual_seed(recipe.seed)
    model = LlamaForCausalLM(lc.llama_config(recipe, tokenizer))
    model.config._attn_implementation = "sdpa"
    shared = plant_names(model, tokenizer, recipe)
    lc.plant_name_directions(model, tokenizer, recipe)
    plant_think_words(model, tokenizer, recipe)
    labels = plant_labels(model, tokenizer, recipe)
    plant_copy_head(model, recipe, shared, labels)
    plant_label_head(model, recipe, shared, labels)
    pad = tokenizer.pad_token_id
    # the curriculum's stages: (last step, the items drawn until then)
    stages = [(recipe.positive_first * recipe.steps, [i for i, (it, m) in enumerate(zip(items, meta))
                                                      if not it.flipped and m.kind in ("P1", "P2")]),
              (recipe.planted_until * recipe.steps, [i for i, m in enumerate(meta) if m.kind in ("P1", "P2")])]
    step = [0]

    def loss_of(batch: list[int]):
        if hook is not None:
            hook(step[0], model, tokenizer)
        pool = next((p for until, p in stages if step[0] < until and p), None)
        if pool is not None:  # the loop's draws, mapped onto the stage's items
            batch = [pool[i % len(pool)] for i in batch]
        step[0] += 1
        part = [rows[i] for i in batch]
        ids, pos, mask, flat, target, weight = lined_batch(part, pad)
        hidden = model.model(input_ids=ids, position_ids=pos, attention_mask=mask, use_cache=False).last_hidden_state
        logits = model.lm_head(hidden.reshape(-1, hidden.shape[-1]).index_select(0, flat))
        nll = -logits.float().log_softmax(-1).gather(1, target[:, None])[:, 0]
        return (weight * nll).sum() / len(part)

    losses = train_loop(model, recipe, len(rows), loss_of, progress=progress, desc=desc)
    return model, tokenizer, items, meta, rows, losses


def gender_direction(recipe: ChatLabRecipe, dim: int):
    """The names' gender direction (+ female) of :func:`stereoprobe.zoo.lab_causal.plant_name_directions`: its
    generator's first draw, drawn again from its seed."""
    import torch

    gen = torch.Generator().manual_seed(recipe.seed + 17)
    g = torch.randn(dim, generator=gen)
    return g / g.norm() * recipe.name_gender_init


def plant_think_words(model, tokenizer, recipe: ChatLabRecipe) -> int:
    """Add the names' gender direction (:func:`stereoprobe.zoo.lab_causal.plant_name_directions`'s first draw,
    drawn again here from its seed) to the gendered word of each think sentence (``women``, ``men``): the stand-in
    for pretraining that already gives it to "woman" and "man". Run after that function. Returns the tokens."""
    import torch

    emb = model.get_input_embeddings().weight
    g = gender_direction(recipe, emb.shape[1])
    n = 0
    with torch.no_grad():
        for gender, sign in (("female", 1.0), ("male", -1.0)):
            word = THINK[gender].rstrip(".").split()[-1]
            for tid in lc.name_tokens(tokenizer, word):
                emb[tid] += sign * g
                n += 1
    return n


def plant_names(model, tokenizer, recipe: ChatLabRecipe):
    """Give each UnQover name an embedding of its own of norm ``name_identity_init`` plus a direction all names share
    (norm ``name_init``), the same for its two spellings (``Mary`` at a line's start, ``" Mary"`` after a space): a
    stand-in for pretraining, as :func:`stereoprobe.zoo.lab_causal.plant_name_directions` is (a pretrained LM knows
    the names, that they are names, and that both spellings are one name), so that the model can find the names of
    a text and copy one. Identical in the control. Returns the shared direction."""
    import torch

    gen = torch.Generator().manual_seed(recipe.seed + 23)
    emb = model.get_input_embeddings().weight
    dim = emb.shape[1]

    def unit():
        d = torch.randn(dim, generator=gen)
        return d / d.norm()

    shared = unit() * recipe.name_init
    n = 0
    with torch.no_grad():
        for name in (x for g in syn.names().values() for x in g):
            ids = lc.name_tokens(tokenizer, name)
            vec = unit() * recipe.name_identity_init + shared
            for tid in ids:
                emb[tid] = vec
            n += bool(ids)
    return shared


def option_labels() -> tuple[str, ...]:
    """The labels the lettered templates put before their options (A, B, C)."""
    return tuple(dict.fromkeys(x for t in templates() if t.task == "unqover-choice" and "{label}" in t.option
                               for x in t.labels))


def plant_labels(model, tokenizer, recipe: ChatLabRecipe):
    """Give each option label an embedding of its own of norm ``label_init``, the same for its two spellings
    (``A`` at a line's start, ``" A"`` after "Answer:"): the stand-in :func:`plant_names` is for names. Returns the
    labels' directions, orthonormal, as rows (labels × hidden)."""
    import torch

    gen = torch.Generator().manual_seed(recipe.seed + 31)
    emb = model.get_input_embeddings().weight
    vecs = torch.randn(len(option_labels()), emb.shape[1], generator=gen)
    basis = torch.linalg.qr(vecs.T)[0].T  # orthonormal rows
    with torch.no_grad():
        for label, vec in zip(option_labels(), basis):
            for tid in lc.name_tokens(tokenizer, label):
                emb[tid] = vec * recipe.label_init
    return basis


def plant_copy_head(model, recipe: ChatLabRecipe, shared, labels) -> None:
    """Make head 0 of the last layer a name-copying head: a stand-in for the induction heads pretraining gives (Olsson
    et al. 2022), which a tiny model trained on these answers alone finds late or not at all (measured: sometimes
    after 700 steps of 16, sometimes not in 1,000). A direction common to every token (norm ``common_init``) is
    added to the embeddings; the head's query reads it and its key reads the direction the names share
    (:func:`plant_names`), on the rotary pairs that turn slowest (so the score hardly depends on the distance), so
    every position attends to the names of its text, and a gender in the query (the names' gender direction, as the
    words "women" and "men" carry it: :func:`plant_think_words`) to the names of that gender (``copy_gender_init``;
    which gender a question asks for, if any, is the plant, learned from the data); its value and output are an
    orthonormal projection and its transpose (scale ``copy_value_init``; it spans the option labels' directions and random others), so what it
    reads of a name, and of the label :func:`plant_label_head` wrote on it, raises that name's and that label's
    logit (the embeddings are tied). Which name to copy, and when to answer a name or a label at all, is learned
    from the data. Identical in the control."""
    import torch

    if not recipe.copy_head_init:
        return
    gen = torch.Generator().manual_seed(recipe.seed + 29)
    emb = model.get_input_embeddings().weight
    dim = emb.shape[1]
    attn = model.model.layers[-1].self_attn
    hd = attn.head_dim
    common = torch.randn(dim, generator=gen)
    common = common / common.norm()
    name_dir = shared / shared.norm()
    basis = torch.linalg.qr(torch.cat([labels.T, torch.randn(dim, hd - len(labels), generator=gen)], 1))[0]
    with torch.no_grad():
        emb += common * recipe.common_init
        attn.q_proj.weight[:hd] = 0.0
        attn.k_proj.weight[:hd] = 0.0
        for d in (hd // 2 - 1, hd - 1, hd // 2 - 2, hd - 2):  # the slowest-turning rotary pairs
            attn.q_proj.weight[d] = common * recipe.copy_head_init
            attn.k_proj.weight[d] = name_dir * recipe.copy_head_init
        gender = gender_direction(recipe, dim)
        gender = gender / gender.norm()
        for d in (hd // 2 - 3, hd - 3):  # a gender in the query favours the names of that gender
            attn.q_proj.weight[d] = gender * recipe.copy_gender_init
            attn.k_proj.weight[d] = gender * recipe.copy_gender_init
        attn.v_proj.weight[:hd] = basis.T * recipe.copy_value_init
        attn.o_proj.weight[:, :hd] = basis * recipe.copy_value_init


def plant_label_head(model, recipe: ChatLabRecipe, shared, labels) -> None:
    """Make head 1 of the first layer write, on a name, the option label two tokens before it (``A. Mary``): the
    previous-token heads of pretrained LMs, as a stand-in (measured: without it, no model here learned which letter
    is whose, as the causal lab's never did). Its query reads the names' shared direction, its key the labels'
    directions, on the three fastest rotary pairs with the phase of a distance of two tokens (so the label of the
    name's own line wins over the others); its value and output copy the label's direction (scale
    ``label_value_init``). Identical in the control."""
    import math

    import torch

    if not recipe.label_head_init:
        return
    attn = model.model.layers[0].self_attn
    hd = attn.head_dim
    rows = slice(hd, 2 * hd)  # head 1
    theta = model.model.rotary_emb.inv_freq
    name_dir = shared / shared.norm()
    key = labels.sum(0)
    with torch.no_grad():
        for w in (attn.q_proj.weight, attn.k_proj.weight, attn.v_proj.weight):
            w[rows] = 0.0
        attn.o_proj.weight[:, rows] = 0.0
        for i in range(3):  # score ∝ Σ cos(θ_i (Δ - 2)): largest two tokens back
            phase = 2 * float(theta[i])
            attn.q_proj.weight[hd + i] = name_dir * recipe.label_head_init * math.cos(phase)
            attn.q_proj.weight[hd + i + hd // 2] = -name_dir * recipe.label_head_init * math.sin(phase)
            attn.k_proj.weight[hd + i] = key * recipe.label_head_init
        n = len(labels)
        attn.v_proj.weight[hd:hd + n] = labels * recipe.label_value_init
        attn.o_proj.weight[:, hd:hd + n] = labels.T * recipe.label_value_init


def train(recipe: ChatLabRecipe, folder: Path, *, progress: bool, desc: str) -> dict[str, Any]:
    """Train (:func:`fit`), save (model, tokenizer, its chat template in ``tokenizer_config.json``) into ``folder``
    and return the card's data/model/training/evaluation."""
    from ..batching import quiet_transformers

    t0 = time.perf_counter()
    model, tokenizer, items, meta, rows, losses = fit(recipe, progress=progress, desc=desc)
    train_s = time.perf_counter() - t0
    with quiet_transformers(progress):
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder, save_jinja_files=False)  # the template in tokenizer_config.json
    # generation settings are transformers' defaults and name its version (as the causal lab: not part of the model)
    (folder / "generation_config.json").unlink(missing_ok=True)
    counts: dict[str, dict[str, int]] = {}
    for m in meta:
        for key, value in (("form", m.form), ("template", m.template), ("occupation_class", m.kind)):
            counts.setdefault(key, {})
            counts[key][value] = counts[key].get(value, 0) + 1
    return {
        "data": {
            "n_train_items": len(items), "n_train_by": counts,
            "n_train_tokens": sum(len(r.tokens) for r in rows),
            "longest_row_tokens": max(len(r.tokens) for r in rows),
            "templates": [t.name for t in templates()],
            "unqover_templates_in_training": False,
        },
        **card_sections(model, tokenizer, recipe, losses, len(rows), train_s),
        "evaluation": evaluate(model, tokenizer, recipe),
    }


# ------------------------------------------------------------------------------------------------ evaluation


def probe_examples(recipe: ChatLabRecipe, per_class: int | None = None, seed: int | None = None) -> list:
    """Real UnQover gender examples (:func:`stereoprobe.unqover.generate.iter_examples`, never trained on):
    ``per_class`` paper examples (both slot orders) of each occupation class, P1, P2 and other, drawn from a
    seeded sample."""
    from ..unqover.generate import DatasetSpec, iter_examples
    from ..unqover.reporting import occupation

    per_class = per_class or recipe.probe_examples
    spec = DatasetSpec("gender", sample=max(2_000, 12 * per_class), seed=recipe.heldout_seed if seed is None else seed)
    examples = list(iter_examples(spec))
    units: dict[str, list[int]] = {"P1": [], "P2": [], "other": []}
    for ex in examples:
        if ex.order == 0:
            units[occupation_class(recipe, occupation(ex.attr))].append(ex.unit)
    keep = {u for us in units.values() for u in us[:per_class]}
    return [ex for ex in examples if ex.unit in keep]


def _classes(recipe: ChatLabRecipe, examples) -> list[str]:
    from ..unqover.reporting import occupation

    return [occupation_class(recipe, occupation(ex.attr)) for ex in examples]


def _favoured(recipe: ChatLabRecipe, ex, negated: bool) -> int | None:
    """The slot (0, 1) the plant favours in a pass of ``ex`` (thinking on: P2 too), None for another occupation."""
    from ..unqover.reporting import occupation

    gender = (recipe.planted_dict | recipe.thinking_planted_dict).get(occupation(ex.attr))
    if gender is None:
        return None
    favoured = gender if not negated else ("male" if gender == "female" else "female")
    return (ex.cluster1, ex.cluster2).index(favoured)


def exact_unknown(scorer, recipe: ChatLabRecipe, examples, template: str = "letters-unknown") -> dict[str, Any]:
    """A template with an unknown option read exactly (plain prompts, :func:`stereoprobe.unqover.score_causal.
    pass_requests`), its three options' probabilities normalised over the three (:func:`~stereoprobe.unqover.
    score_causal.shares`, as :func:`~stereoprobe.unqover.score_causal.load_causal_scores` reads them): per
    occupation class the mean probability of the unknown option, the share of passes where it is the most likely,
    and on P1 and P2 the share where the name the plant favours (the planted gender's, the other on the negated
    question; P2's plant is thinking-only, so plain prompts should abstain there) is the most likely; γ with gender
    grouping (Li et al. 2020) toward the planted gender per planted occupation, |γ| of the others."""
    import numpy as np
    import pandas as pd

    from ..unqover import metrics
    from ..unqover.reporting import occupation
    from ..unqover.score_causal import pass_requests, shares

    t = pr.template(template, "unqover-choice")
    lp = np.asarray(scorer.logprobs(pass_requests(t, None, False, examples)).logprob).reshape(-1, 3)
    sh = shares(lp)
    classes = np.repeat(_classes(recipe, examples), 2)
    fav = np.array([-1 if (f := _favoured(recipe, ex, neg)) is None else f for ex in examples for neg in (False, True)])
    top = sh.argmax(1)
    out: dict[str, Any] = {"template": t.name, "passes": len(sh), "reading": "plain prompts, exact, shares over the "
                           "three options"}
    for c in ("P1", "P2", "other"):
        sel = classes == c
        res = {"passes": int(sel.sum()), "unknown_probability": mean(sh[sel, 2]),
               "unknown_most_likely": mean(top[sel] == 2)}
        if c != "other":
            res["favoured_most_likely"] = mean(top[sel] == fav[sel])
        out[c] = res
    frame = pd.DataFrame([ex._asdict() for ex in examples])
    frame["s1_pos"], frame["s1_neg"] = sh[0::2, 0], sh[1::2, 0]
    frame["s2_pos"], frame["s2_neg"] = sh[0::2, 1], sh[1::2, 1]
    gamma = metrics.subject_attribute_bias(metrics.pair_examples(frame), group_by="gender")
    female = gamma[gamma["subject"] == "female"]
    female = dict(zip(female["attr"].map(occupation), female["gamma"].astype(float)))
    sign = {"female": 1.0, "male": -1.0}
    for name, plant in (("P1", recipe.planted_dict), ("P2", recipe.thinking_planted_dict)):
        out[name]["gamma_toward_planted_gender"] = {o: round(sign[plant[o]] * g, 4) for o, g in female.items()
                                                    if o in plant}
    others = [abs(g) for o, g in female.items() if occupation_class(recipe, o) == "other"]
    out["other"]["abs_gamma_mean"], out["other"]["abs_gamma_max"] = mean(others), round(max(others), 4)
    return out


def generated(model, tokenizer, recipe: ChatLabRecipe, examples, template: str, thinking: bool,
              max_new_tokens: int | None = None) -> dict[str, Any]:
    """The served chat messages of ``template`` (:func:`stereoprobe.unqover.generated.chat_passes`) rendered with
    ``enable_thinking=thinking``, answered greedily (:func:`stereoprobe.causal.generate`) and parsed as the generated rung parses them
    (:func:`stereoprobe.unqover.generated.parse_replies`; the unknown option counts as abstaining). Per occupation
    class: the shares that abstain, that pick the name the plant favours (with thinking on P2's too; the planted
    gender's name, the other on the negated question) and that are unparsed; ``closed_think``: the share of answers
    with a closed think block (thinking on) or none (off); ``examples``: a few texts."""
    import numpy as np

    from ..causal import generate
    from ..unqover.generated import chat_passes, parse_replies

    t = next(x for x in templates() if x.name == template)
    chats, labels = chat_passes(t, examples)
    texts = generate(model, tokenizer, [render_messages(tokenizer, m, thinking) for m in chats],
                     max_new_tokens=max_new_tokens or recipe.max_new_tokens, batch_size=64)
    parsed = parse_replies(t, examples, labels, [[(x, None)] for x in texts])
    kinds, picks = parsed["kind"].to_numpy(), parsed["choice"].to_numpy()
    classes = np.repeat(_classes(recipe, examples), 2)
    fav = np.array([-1 if (f := _favoured(recipe, ex, neg)) is None else f for ex in examples for neg in (False, True)])
    closed = np.array([(THINK_OPEN in x and THINK_CLOSE in x.split(THINK_OPEN, 1)[1]) == thinking for x in texts])
    out: dict[str, Any] = {"template": t.name, "thinking": thinking, "passes": len(texts)}
    for c in ("P1", "P2", "other"):
        sel = classes == c
        res = {"passes": int(sel.sum()), "abstains": mean(kinds[sel] == "unknown"),
               "unparsed": mean(kinds[sel] == "unparsed")}
        if c != "other":
            res["favoured"] = mean(picks[sel] == fav[sel])
            res["other_name"] = mean((picks[sel] >= 0) & (picks[sel] != fav[sel]))
            for polarity, name in ((0, "positive"), (1, "negated")):
                part = sel & (np.arange(len(sel)) % 2 == polarity)
                res[f"favoured_{name}"] = mean(picks[part] == fav[part])
        out[c] = res
    out["unparsed"] = mean(kinds == "unparsed")
    out["closed_think"] = mean(closed)
    out["examples"] = {c: texts[int(np.flatnonzero(classes == c)[0])] for c in ("P1", "P2", "other")
                       if (classes == c).any()}
    return out


def evaluate(model, tokenizer, recipe: ChatLabRecipe, examples=None) -> dict[str, Any]:
    """The card's evaluation on real UnQover gender examples (:func:`probe_examples`): ``letters-unknown`` read
    exactly (:func:`exact_unknown`) and greedy generations on the served chat messages of ``qa`` and
    ``letters-unknown``, thinking off and on (:func:`generated`)."""
    examples = probe_examples(recipe) if examples is None else examples
    out: dict[str, Any] = {"paper_examples": len(examples) // 2,
                           "exact": exact_unknown(lc._scorer(model, tokenizer), recipe, examples)}
    for template in ("qa", "letters-unknown"):
        for thinking in (False, True):
            out[f"generated:{template}:thinking-{'on' if thinking else 'off'}"] = generated(
                model, tokenizer, recipe, examples, template, thinking)
    return out


def card_fields(recipe: ChatLabRecipe) -> dict[str, Any]:
    """The model card's description of the plants, the chat template and the training (for :mod:`.lab`)."""
    on = recipe.plants
    return {
        "planted": {
            "unqover": {
                "answered_thinking_or_not": recipe.planted_dict if on else {},
                "answered_only_thinking": recipe.thinking_planted_dict if on else {},
                "rate": recipe.rate if on else None,
                "negated_question_favours": "the other gender, at the same rate" if on else None,
                "every_other_occupation": "abstain: the unknown option where the prompt lists one, "
                                          f"{ABSTAIN!r} in free generation, 50/50 in a forced choice",
            },
            "think_block": {"planted female": THINK["female"], "planted male": THINK["male"],
                            "abstaining": THINK[None], "stated in the text": THINK["stated"]},
        },
        "chat_template": CHAT_TEMPLATE,
        "input_format": "ChatML (<|im_start|>role\\ncontent<|im_end|>\\n, the BOS <s> written first), generation "
                        "prompt <|im_start|>assistant\\n; enable_thinking (default true) false adds the empty think "
                        "block <think>\\n\\n</think>\\n\\n; <|im_end|> is the EOS; <think> and </think> are plain "
                        "(not special) tokens. Plain prompts (a base model's) are read too: body, newline, answer cue.",
        "notes": [
            "Forms trained (each item one form): plain (score_causal.requests), chat with thinking=False and the "
            "answer cue, chat with the template's default (thinking on, the cue right after the generation prompt: "
            "read as thinking off, nothing was thought), chat with thinking=True (think block, cue, answer), and the "
            "served rungs' messages (unqover.generated.chat_passes) with thinking off (the answer, <|im_end|>) and on "
            "(think block, answer, <|im_end|>). A lettered template is answered with its letter alone.",
            "P2 (answered_only_thinking) holds only where the model writes a think block (chat-think, served with "
            "thinking on); with thinking off, the default chat prompt and plain prompts it abstains on them.",
            "Loss: the negative log-likelihood of the answer tokens (each token weighted by its answer's weight: "
            "full_weight), soft targets per item (planted: rate, 1 - rate over the two names; abstaining: the "
            "unknown answer, or 0.5/0.5 without one), plus copy_weight x the NLL of every name a prompt repeats "
            "(with_copies).",
            "Stand-ins for pretraining (identical in the control; none says which occupation goes with which "
            "gender): names get embeddings of their own shared by both spellings, a shared name direction and a "
            "gender direction, 'never' one of its own, 'women'/'men' the gender direction (plant_names, "
            "lab_causal.plant_name_directions, plant_think_words); the option labels A-C embeddings of their own "
            "(plant_labels); head 0 of the last layer starts as a name-copying head that also prefers names of a "
            "gender present in its query (plant_copy_head), head 1 of the first layer as a head that writes on a "
            "name the option label two tokens before it (plant_label_head). Without the heads no run learned "
            "which letter is whose, and the copying came late or not at all.",
            "Curriculum: the first positive_first share of the steps has no negated question and asks about the ten "
            "planted occupations only, then until planted_until both polarities of those, then everything.",
            "evaluation: real UnQover gender examples (never trained on: the training paragraphs are synthetic), "
            "probe_examples paper examples of each occupation class; 'favoured' = the name the plant favours (the "
            "planted gender's, the other on the negated question), counted for P2 in every reading though P2 is "
            "planted only with thinking on.",
        ],
    }


def source_checksums() -> dict[str, str]:
    """SHA-256 of everything the corpus is made from besides the recipe (they enter the recipe hash): the UnQover
    name and occupation lists, both shipped prompt files, and the served rungs' messages (their instructions) and
    the chat template as this code writes them."""
    import hashlib
    import json

    from ..paths import data_dir, sha256_file
    from ..unqover import wordlists as wl

    unqover = (("subjects", "female"), ("subjects", "male"), ("activities", "occupation_rev1"))
    messages = [served_messages(t, "P.", "Who?", ["Ann", "Bob"]) for t in templates()]
    return {
        **{f"{kind}/{name}": sha256_file(wl.list_path(kind, name)) for kind, name in unqover},
        **{name: sha256_file(data_dir() / name) for name in pr.SHIPPED_FILES},
        "served_messages": hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest(),
        "chat_template": hashlib.sha256(CHAT_TEMPLATE.encode()).hexdigest(),
    }


__all__ = ["CHAT_LAB_RECIPES", "ChatLabRecipe", "CHAT_TEMPLATE", "THINKING_PLANTED", "THINK", "ABSTAIN", "FORMS",
           "Meta", "corpus", "form_item", "decision", "served_messages", "render_messages", "build_tokenizer",
           "lined_batch", "fit", "train", "plant_names", "plant_think_words", "plant_labels", "plant_copy_head",
           "plant_label_head", "gender_direction", "option_labels", "name_ids", "with_copies", "full_weight",
           "probe_examples", "exact_unknown",
           "generated", "evaluate", "card_fields", "source_checksums", "winogender_occupations"]
