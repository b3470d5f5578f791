"""UnQover on causal and chat LMs: S(x | τ) from the model's log-probability of x as the answer.

Li et al. (2020) read S(x | τ) from an extractive-QA model's span probabilities or a masked LM's fill; a
decoder-only LM has neither. It is asked the example's paragraph and question through a prompt template
(:mod:`stereoprobe.prompts`) and each subject is scored as the continuation of the prompt
(:class:`stereoprobe.causal.CausalScorer`: log P summed over the subject's tokens, the tokens cut at the boundary
rule of :func:`stereoprobe.causal.continuation_tokens`). Two scorers, reported apart:

* **answer** — the subject itself after the template's answer cue (``"… Who was a hunter?\\nAnswer:"`` +
  ``" Gerald"``);
* **choice** — both subjects listed as options in the prompt, in the paragraph's order (slot 1 first), and the
  option's label (``" A"``) or its text scored, as the template says. Option order follows the paragraph's
  order, so the example's two orders also swap the options: the positional error δ measures the two
  positions together, and γ, μ cancel both (Li et al. 2020, Eq. 5).

Either way S(x1 | τ) = P(x1) / (P(x1) + P(x2)): the two log-probabilities normalised over the example's two
subjects (the pair's other subject is the only alternative the metric compares; raw sums would favour
subjects spelled with fewer tokens). δ, ε, avg S, γ, η and μ then follow exactly as for the QA and masked-LM
variants (:mod:`stereoprobe.unqover.metrics`). The store keeps ``logp1``/``logp2`` per pass, keyed by scorer,
template digest, chat or plain and precision. Instruct models read the prompt through their own chat template
(the user turn holds paragraph and question, the assistant turn starts with the answer cue); base models a plain
prompt (``chat=None`` decides from the tokenizer). Every choice made here is listed in the book's appendix *Where
the code and the paper differ*.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..causal import PromptJob, resolve_chat
from ..errors import StereoprobeError
from ..modelref import progress_label
from ..models import load_tokenizer
from ..options import RunOptions, as_options
from ..prompts import PromptTemplate
from .generate import DatasetSpec, Example, count, example_keys, fingerprint, iter_examples

#: The two causal scorers (module doc).
SCORERS = ("answer", "choice")
#: Columns of a causal run: log P of the slot-1 and slot-2 subject (natural log, summed over their tokens), and of
#: the unknown option (``logpu``) for a template that lists one.
CAUSAL_COLUMNS = ("logp1", "logp2")
UNKNOWN_COLUMN = "logpu"
#: Passes per store shard.
SHARD_PASSES = 20_000


def task_of(scorer: str) -> str:
    """The prompt task of a scorer (``answer`` → ``unqover-answer``)."""
    if scorer not in SCORERS:
        raise StereoprobeError(f"Unknown causal scorer {scorer!r}; choose answer or choice.")
    return f"unqover-{scorer}"


def columns(template: PromptTemplate) -> tuple[str, ...]:
    """The store columns of a template's run: :data:`CAUSAL_COLUMNS`, and ``logpu`` where it lists an unknown
    option."""
    return CAUSAL_COLUMNS + ((UNKNOWN_COLUMN,) if template.unknown is not None else ())


def requests(template: PromptTemplate, tokenizer, chat: bool, context: str, question: str, ans1: str,
             ans2: str, thinking: bool | None = None) -> list[tuple[str, str]]:
    """The (prompt, continuation) requests of one pass: slot 1's subject, then slot 2's (then the unknown option,
    for a template that lists one)."""
    if template.task == "unqover-choice":
        prompt = template.prompt(tokenizer, chat=chat, thinking=thinking, paragraph=context, question=question,
                                 options=[ans1, ans2])
        words = template.scored([ans1, ans2])
    else:
        prompt = template.prompt(tokenizer, chat=chat, thinking=thinking, paragraph=context, question=question)
        words = [ans1, ans2]
    return [(prompt, template.continuation(prompt, w)) for w in words]


def pass_requests(template: PromptTemplate, tokenizer, chat: bool, examples,
                  thinking: bool | None = None) -> list[tuple[str, str]]:
    """Requests of the examples' passes in pass order (plain question, then negated), ``len(columns(template))``
    per pass."""
    out: list[tuple[str, str]] = []
    for ex in examples:
        for question in (ex.question, ex.negated_question):
            out += requests(template, tokenizer, chat, ex.context, question, ex.ans1, ex.ans2, thinking)
    return out


def check_causal(model: str, spec: DatasetSpec, template: PromptTemplate, chat: bool | None, *,
                 smoke: bool = False, thinking: bool | None = None) -> bool | None:
    """Check from the tokenizer alone (no weights load) that ``model`` can be scored: the chat setting, every subject
    (and a choice template's labels) spelled without the unknown token and cut cleanly after the answer cue, one
    example's prompt within the context window. Returns the resolved chat setting (None without a local copy:
    loading then says what to do)."""
    from ..causal import continuation_tokens
    from .score_lm import subject_texts

    tok = load_tokenizer(model, smoke=smoke)
    if tok is None:
        return None
    use_chat = resolve_chat(tok, chat, model)
    if thinking is not None and not use_chat:
        raise StereoprobeError(f"{str(model)!r} has no chat template, so thinking cannot be switched for it; leave "
                               "thinking out for this model.")
    ex = next(iter_examples(spec, 0, 1), None)
    if ex is None:
        return use_chat
    words = subject_texts(spec) if template.task == "unqover-answer" or template.score == "option" \
        else list(template.labels)
    for word in words:
        prompt, cont = requests(template, tok, use_chat, ex.context, ex.question, word, ex.ans2, thinking)[0]
        continuation_tokens(tok, prompt, cont)
    if template.unknown is not None:
        check_unknown_option(template, tok, model)
        continuation_tokens(tok, *requests(template, tok, use_chat, ex.context, ex.question, ex.ans1, ex.ans2,
                                           thinking)[2])
    _check_window(model, tok, requests(template, tok, use_chat, ex.context, ex.negated_question, ex.ans1, ex.ans2,
                                       thinking), smoke)
    return use_chat


def check_unknown_option(template: PromptTemplate, tokenizer, model: str) -> None:
    """Refuse a template whose unknown option the tokenizer spells with its unknown token: the model would read
    "<unk>" where the template offers to abstain, and its share of the answers would be that of any unknown text."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None or template.unknown is None:
        return
    if unk in tokenizer(template.unknown, add_special_tokens=False)["input_ids"]:
        raise StereoprobeError(f"The tokenizer of {str(model)!r} spells the unknown option {template.unknown!r} of "
                               f"template {template.name!r} with its unknown token {tokenizer.unk_token!r}; write "
                               "the option in words its vocabulary has (e.g. \"Cannot be determined\").")


def _check_window(model: str, tokenizer, reqs, smoke: bool) -> None:
    from transformers import AutoConfig

    from ..causal import check_fits
    from ..models import resolve

    try:
        config = AutoConfig.from_pretrained(resolve(model, smoke=smoke), trust_remote_code=False)
    except (OSError, ValueError, KeyError, TypeError):  # a GGUF file or no config: the scorer checks each prompt
        return
    longest = max(reqs, key=lambda r: len(r[0]) + len(r[1]))
    check_fits(config, tokenizer, *longest)


@dataclass(kw_only=True)
class CausalJob(PromptJob):
    """Shard ``i`` of ``spec``'s passes scored by a causal LM with one template (a worker's unit, local or Ray)."""

    spec: DatasetSpec
    thinking: bool | None = None

    def score_shard(self, i: int) -> dict[str, np.ndarray]:
        scorer = self.scorer()
        start, stop = self.span(i)
        examples: list[Example] = list(iter_examples(self.spec, start // 2, stop // 2))
        lp = scorer.logprobs(pass_requests(self.template, scorer.tokenizer, self.chat, examples,
                                           self.thinking)).logprob
        ids = np.empty(2 * len(examples), dtype=np.int64)
        ids[0::2] = [2 * ex.index for ex in examples]
        ids[1::2] = ids[0::2] + 1
        names = columns(self.template)
        lp = np.asarray(lp, dtype=np.float32).reshape(len(ids), len(names))
        return {"pass_id": ids, **{name: lp[:, j] for j, name in enumerate(names)}}


def _run_kind(template: PromptTemplate, chat: bool, dtype: str, thinking: bool | None = None) -> str:
    scorer = template.task.removeprefix("unqover-")
    think = "" if thinking is None else f"-think-{'on' if thinking else 'off'}"
    return f"causal-{scorer}-{template.name}-{template.digest}-{'chat' if chat else 'plain'}{think}-{dtype}"


def score_causal_passes(model: str, spec: DatasetSpec, template: PromptTemplate, *, chat: bool | None = None,
                        options: RunOptions | None = None, shard_passes: int = SHARD_PASSES,
                        thinking: bool | None = None):
    """Score every pass of ``spec`` with the causal LM ``model`` through ``template`` into the score store
    (resuming; nothing twice). ``chat``: the chat template (True), a plain prompt (False) or whichever the
    tokenizer has (None). ``thinking``: the chat template's thinking switch; only False is scored here (an empty
    think block before the answer cue), thinking on is a generated reading (:func:`generated_frame`). The tokenizer
    is checked before any weight loads (:func:`~stereoprobe.unqover.score_causal.check_causal`). Returns the
    complete :class:`~stereoprobe.store.StoreRun` (columns ``pass_id, logp1, logp2``)."""
    from ..engine import fill, worker_device
    from ..models import model_fingerprint

    run_options = as_options(options)
    if not isinstance(template, PromptTemplate) or not template.task.startswith("unqover-"):
        raise StereoprobeError(f"template {template!r} is not an UnQover prompt template; pass one of "
                               "stereoprobe.prompts.templates('unqover-answer') or ('unqover-choice').")
    if spec.variant != "qa" or spec.newsqa:
        raise StereoprobeError(f"A causal LM reads the QA variant of the dataset without the NewsQA header, not "
                               f"variant={spec.variant!r}, newsqa={spec.newsqa}; pass DatasetSpec(…, variant='qa').")
    if isinstance(shard_passes, bool) or not isinstance(shard_passes, (int, np.integer)) or shard_passes < 2 \
            or shard_passes % 2:
        raise StereoprobeError(f"shard_passes={shard_passes!r} must be a positive even number (an example's two "
                               f"questions stay in one shard); pass e.g. {SHARD_PASSES}.")
    engine, smoke = run_options.engine, run_options.smoke
    dev = worker_device(run_options.device, engine)
    dtype = run_options.dtype()
    model_fp = model_fingerprint(model, smoke=smoke)  # fetched when not local; no weights load on the driver
    if thinking:
        raise StereoprobeError("Thinking on is read by generating the reasoning and then the answer, not by scoring "
                               "the subjects after the prompt; read it with generated_frame (a report does).")
    use_chat = check_causal(model, spec, template, chat, smoke=smoke, thinking=thinking)
    if use_chat is None:  # pragma: no cover - the files are local now, so the tokenizer loads or says why not
        raise StereoprobeError(f"The tokenizer of {model!r} does not load from its files; save the tokenizer of the "
                               "model it was fine-tuned from into its folder.")
    store = run_options.score_store()
    run = store.run(model_fp, fingerprint(spec), _run_kind(template, use_chat, dtype, thinking),
                    {c: np.float32 for c in columns(template)})
    if run.is_complete():
        return run
    n = count(spec).passes
    job = CausalJob(n_rows=n, shard_size=int(shard_passes), model=model, spec=spec, template=template, chat=use_chat,
                    thinking=thinking, batch_tokens=run_options.batch_tokens, device=dev, precision=dtype, smoke=smoke)
    label = progress_label(model)
    return fill(run, job, engine=engine, workers=run_options.workers, progress=run_options.show_progress,
                desc=f"{label} · {template.task.removeprefix('unqover-')}:{template.name} · {spec.dataset} "
                     f"({n:,} passes)")


#: 0.7.0's name of :func:`score_causal_passes` (the module's own name: ``stereoprobe.unqover.score_causal`` is this module
#: once it is imported, so the probe exports the function as ``score_causal_passes``).
score_causal = score_causal_passes


def normalised(logp1: np.ndarray, logp2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """S of the two subjects: P(x1) / (P(x1) + P(x2)) and its complement, computed stably from log-probabilities.

    >>> s1, s2 = normalised(np.array([-1.0, -3.0]), np.array([-1.0, -2.0]))
    >>> np.round(s1, 4).tolist(), np.round(s1 + s2, 6).tolist()
    ([0.5, 0.2689], [1.0, 1.0])
    """
    d = np.asarray(logp1, np.float64) - np.asarray(logp2, np.float64)
    s1 = 1.0 / (1.0 + np.exp(-d))
    return s1, 1.0 - s1


def shares(logps: np.ndarray) -> np.ndarray:
    """The options' probabilities normalised over the options (rows: passes; columns: the subjects, then the
    unknown option), computed stably from log-probabilities (a softmax; :func:`normalised` for two).

    >>> np.round(shares(np.log(np.array([[0.2, 0.2, 0.6]]))), 4).tolist()
    [[0.2, 0.2, 0.6]]
    """
    from scipy.special import softmax

    return softmax(np.asarray(logps, np.float64), axis=1)


def load_causal_scores(model: str, spec: DatasetSpec, template: PromptTemplate, **kwargs) -> pd.DataFrame:
    """Per-ordered-example subject scores of a causal LM (scoring what the store lacks), in the columns of
    :func:`stereoprobe.unqover.score_qa.load_scores` (``s1_pos`` … ``s2_neg``), S normalised over the two subjects
    (:func:`normalised`). A template with an unknown option normalises over its three options (:func:`shares`) and
    adds the unknown option's share, ``u_pos`` and ``u_neg`` (:mod:`stereoprobe.unqover.abstention`).
    ``kwargs`` go to :func:`score_causal`."""
    from ..errors import StoreError

    run = score_causal(model, spec, template, **kwargs)
    raw = run.read()
    meta = example_keys(spec)
    expected = np.empty(2 * len(meta), dtype=np.int64)
    expected[0::2] = 2 * meta["index"].to_numpy()
    expected[1::2] = expected[0::2] + 1
    if not np.array_equal(raw["pass_id"].to_numpy(dtype=np.int64), expected):
        raise StoreError(f"The stored scores in {run.path} do not match the passes of {spec.dataset}; delete that "
                         "folder to recompute them.")
    if template.unknown is None:
        s1, s2 = normalised(raw["logp1"].to_numpy(), raw["logp2"].to_numpy())
        return per_example(meta, s1, s2)
    p = shares(raw[list(columns(template))].to_numpy())
    return per_example(meta, p[:, 0], p[:, 1], p[:, 2])


def per_example(meta: pd.DataFrame, s1: np.ndarray, s2: np.ndarray, u: np.ndarray | None = None,
                x: np.ndarray | None = None) -> pd.DataFrame:
    """``meta`` (one row per ordered example) with the per-pass shares (plain question, then negated) as the score
    frame's columns: ``s1_pos`` … ``s2_neg``, and where given the abstention ``u_pos``/``u_neg`` and the unparsed
    ``x_pos``/``x_neg`` shares (:mod:`stereoprobe.unqover.abstention`)."""
    meta["s1_pos"], meta["s1_neg"] = s1[0::2], s1[1::2]
    meta["s2_pos"], meta["s2_neg"] = s2[0::2], s2[1::2]
    if u is not None:
        meta["u_pos"], meta["u_neg"] = u[0::2], u[1::2]
    if x is not None:
        meta["x_pos"], meta["x_neg"] = x[0::2], x[1::2]
    return meta


# -- a report's rows: one per (scorer, template), and their spread ----------------------------------------------
def scorer_templates(scorers: Sequence[str] | str | None = None,
                     templates: Sequence[str | PromptTemplate] | str | None = None) -> list[PromptTemplate]:
    """The templates a causal report scores: for each scorer (default both) every shipped template of its task that
    asks the paper's forced choice (``templates=None``; the templates with an unknown option, ``letters-unknown`` and
    ``names-unknown``, change the question and are asked by name) or the named ones that belong to it (shipped names, files: a file's templates of each
    scorer's task). A name that fits none of the scorers is an error."""
    from ..prompts import read_templates, select
    from ..prompts import templates as shipped

    scorers = list(SCORERS) if scorers is None else [scorers] if isinstance(scorers, str) else list(scorers)
    if not scorers:
        raise StereoprobeError("scorers is empty; pass answer, choice or both.")
    tasks = [task_of(s) for s in dict.fromkeys(scorers)]
    if templates is None:  # the forced choice the paper asks; the templates with an unknown option are asked by name
        return [t for task in tasks for t in shipped(task, forced=True)]
    names = [templates] if isinstance(templates, (str, Path, PromptTemplate)) else list(templates)
    out: list[PromptTemplate] = []
    for name in names:
        found: list[PromptTemplate] = []
        for task in tasks:
            if isinstance(name, PromptTemplate):
                found += [name] if name.task == task else []
            elif str(name).endswith((".yaml", ".yml", ".json")) or Path(str(name)).expanduser().is_file():
                found += [t for t in read_templates(name) if t.task == task]
            elif any(t.name == str(name) for t in shipped(task)):
                found += select(str(name), task)
        if not found:
            known = "; ".join(f"{task.removeprefix('unqover-')}: {', '.join(t.name for t in shipped(task))}"
                              for task in tasks)
            raise StereoprobeError(f"Template {str(name)!r} is no template of the scorer(s) {', '.join(scorers)} "
                                   f"({known}); pass one of these names or a file with such templates.")
        out += [t for t in found if t not in out]
    return out


def causal_spec(spec: DatasetSpec) -> DatasetSpec:
    """The dataset a causal LM reads: the QA variant's paragraphs and questions, without the NewsQA header (the
    same examples, sample and seed)."""
    import dataclasses

    return dataclasses.replace(spec, variant="qa", newsqa=False, mask=None)


def row_label(label: str, template: PromptTemplate) -> str:
    """How a causal model's row is named in a report: ``<model> · <scorer>:<template>``
    (:class:`stereoprobe.modelref.RowKey`'s label)."""
    from ..modelref import RowKey

    return RowKey(label, template.task.removeprefix("unqover-"), template.name).label


def causal_frames(model: str, label: str, spec: DatasetSpec, templates: Sequence[PromptTemplate], *,
                  chat: bool | None = None, options: RunOptions | None = None,
                  shard_passes: int = SHARD_PASSES) -> dict[str, pd.DataFrame]:
    """Per-example scores of one causal LM, one frame per template, by :func:`row_label`."""
    return {row_label(label, t): load_causal_scores(model, spec, t, chat=chat, options=options,
                                                    shard_passes=shard_passes) for t in templates}


__all__ = ["SCORERS", "CAUSAL_COLUMNS", "UNKNOWN_COLUMN", "columns", "shares", "per_example", "task_of", "requests", "check_causal", "score_causal", "score_causal_passes",
           "normalised",
           "load_causal_scores", "scorer_templates", "causal_spec", "row_label", "causal_frames"]

