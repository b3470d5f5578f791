"""What model each profile key must name, checked before any chapter runs (:func:`check_models`).

A chapter reads the models of a key with one head: UnQover's QA keys span-extraction models (Li et al. 2020,
Sec. 3.1), its LM keys masked LMs (Sec. 3.2), Bias-NLI's keys 3-class NLI classifiers whose labels say which logit
is entailment, neutral and contradiction (Dev et al. 2020, Sec. 3), SODAPOP's a multiple-choice model, the masked
LM that writes its distractors and the encoder of its name embeddings (An et al. 2023, Sec. 3), the chat chapter's
causal LMs (with a chat template where it prompts them as a chat). A model with another head would fail the chapter
after the chapters before it have run, on a GPU after hours; :func:`check_models` refuses it first, in one sentence
naming the profile key and the model, from the files of the models that are local (a folder, a GGUF file or a
snapshot in the Hugging Face cache). A model that is not local is left to the chapter's own loading error, and the
project's ``zoo:``/``lab:``/``asset:`` models to their providers.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from stereoprobe.errors import StereoprobeError

#: The profile keys that name models and the kind each must be: ``qa`` (AutoModelForQuestionAnswering), ``mlm``
#: (AutoModelForMaskedLM), ``nli`` (a sequence classifier with entailment/neutral/contradiction labels), ``mcq``
#: (AutoModelForMultipleChoice), ``encoder`` (any encoder checkpoint: AutoModel reads its body), ``causal``
#: (AutoModelForCausalLM or a GGUF file) and ``chat`` (a causal LM with a chat template). A chapter parameter whose
#: default names a zoo:, lab: or asset: model must be here (tests/test_profiles_hub.py checks it).
MODEL_KEYS = {
    "models": "qa", "lab_models": "qa", "side_by_side": "qa",
    "lm_models": "mlm", "lab_lm_models": "mlm", "mlm": "mlm",
    "nli_models": "nli", "contextual_model": "nli", "proj_finetuned": "nli", "rand_finetuned": "nli",
    "mcq_model": "mcq", "mcq_lab_models": "mcq",
    "name_encoder": "encoder",
    "chat_models": "chat", "causal_lab_models": "causal", "thinking_lab_models": "chat",
}

_NEEDS = {"qa": "an extractive-QA model (…ForQuestionAnswering)", "mlm": "a masked LM (…ForMaskedLM)",
          "nli": "an NLI classifier (…ForSequenceClassification) with entailment, neutral and contradiction labels",
          "mcq": "a multiple-choice model (…ForMultipleChoice)", "encoder": "an encoder",
          "causal": "a causal LM (…ForCausalLM, or a GGUF file)",
          "chat": "a causal chat LM: …ForCausalLM or a GGUF file, with a chat template"}
_IS = {"qa": "an extractive-QA model", "mlm": "a masked LM", "pretraining": "a pre-training checkpoint",
       "classifier": "a sequence classifier",
       "mcq": "a multiple-choice model", "token-classifier": "a token classifier", "causal": "a causal LM",
       "encoder": "a bare encoder with no head"}
_ACCEPTS = {"qa": {"qa"}, "mlm": {"mlm", "pretraining"}, "nli": {"classifier"}, "mcq": {"mcq"}, "causal": {"causal"},
            "chat": {"causal"}}
_SUFFIXES = (("ForQuestionAnswering", "qa"), ("ForSequenceClassification", "classifier"),
             ("ForMultipleChoice", "mcq"), ("ForTokenClassification", "token-classifier"), ("ForMaskedLM", "mlm"),
             ("ForPreTraining", "pretraining"), ("ForCausalLM", "causal"))


def architecture_kind(architecture: str) -> str | None:
    """The head of a config's ``architectures`` entry: qa, classifier, mcq, token-classifier, mlm, pretraining (BERT's
    masked-LM and next-sentence heads; loading decides whether a masked LM is there), causal, encoder (a bare
    ``…Model``), or None when transformers' tables do not say (loading then decides).

    >>> [architecture_kind(a) for a in ("RobertaForSequenceClassification", "GPT2LMHeadModel", "BertModel", "T5X")]
    ['classifier', 'causal', 'encoder', None]
    """
    from transformers.models.auto import modeling_auto as auto

    for suffix, kind in _SUFFIXES:
        if architecture.endswith(suffix):
            return kind
    if architecture in set(auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.values()):
        return "causal"
    if architecture in set(auto.MODEL_MAPPING_NAMES.values()):
        return "encoder"
    return None


def _local(name: str, base: Path) -> tuple[Path, str | None] | None:
    """(folder, GGUF file name or None) of a model that is local: a folder or GGUF file (relative paths from
    ``base``, where the chapters run) or a snapshot in the Hugging Face cache; None otherwise."""
    from stereoprobe.gguf_files import gguf_location
    from stereoprobe.models import local_folder
    from stereoprobe.providers import PROJECT_PREFIXES

    if name.partition(":")[0] in PROJECT_PREFIXES:
        return None
    path = Path(name).expanduser()
    path = path if path.is_absolute() else Path(base) / path
    candidates = [str(path)] if path.exists() else []
    if name.count("/") <= 1 and not name.startswith((".", "/", "~")):
        candidates.append(name)  # a hub id: its snapshot, if cached
    for candidate in candidates:
        try:
            gguf = gguf_location(candidate, must_exist=False)
        except StereoprobeError:  # several GGUF files: loading says which to pass
            return None
        if gguf is not None:
            return gguf
        folder = local_folder(candidate)
        if folder is not None:
            return folder, None
    return None


def _has_chat_template(folder: Path) -> bool:
    if (folder / "chat_template.jinja").is_file() or (folder / "chat_template.json").is_file():
        return True
    try:
        config = json.loads((folder / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(config.get("chat_template"))


def problem(name: str, needs: str, base: Path = Path(".")) -> str | None:
    """Why the local model ``name`` cannot be what a key of kind ``needs`` (:data:`MODEL_KEYS`) must name, as the end
    of a sentence; None when it can, or when its files say nothing (not local, no config, an unknown architecture)."""
    from stereoprobe.gguf_files import gguf_is_chat

    found = _local(name, base)
    if found is None or needs == "encoder":
        return None
    folder, gguf = found
    if gguf is not None:
        if needs not in ("causal", "chat"):
            return "a GGUF file, which holds a causal LM"
        if needs == "causal" or importlib.util.find_spec("gguf") is None:  # no reader: loading says to install it
            return None
        return None if gguf_is_chat(folder / gguf) else "a GGUF file without a chat template"
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    kinds = {architecture_kind(a) for a in config.get("architectures") or ()} - {None}
    if kinds and not kinds & _ACCEPTS[needs]:
        shown = ", ".join(config["architectures"])
        return f"{' or '.join(sorted(_IS[k] for k in kinds))} ({shown})"
    if needs == "nli" and "classifier" in kinds:
        from stereoprobe.errors import MetricsError
        from stereoprobe.nli.measures import label_indices

        try:
            label_indices(config.get("id2label") or {})
        except MetricsError:
            labels = ", ".join(f"{k}: {v}" for k, v in (config.get("id2label") or {}).items()) or "none"
            return f"a classifier whose labels ({labels}) do not name entailment, neutral and contradiction"
    if needs == "chat" and kinds & {"causal"} and not _has_chat_template(folder):
        return "a causal LM without a chat template (tokenizer_config.json, chat_template.jinja)"
    return None


def _names(value: Any) -> Iterable[str]:
    for item in value if isinstance(value, (list, tuple)) else [value]:
        if isinstance(item, str) and item:
            yield item


def _origin(key: str, stem: str, profile_name: str, profile: Mapping[str, Any],
            overrides: Mapping[str, Any] | None) -> str:
    """Where the value of ``key`` that notebook ``stem`` receives was set: ``--set …`` or ``profile P: …``."""
    for label, layer, dotted in (("--set", overrides or {}, f"{stem}."), (f"profile {profile_name}", profile,
                                                                          f"notebooks.{stem}.")):
        if key in ((layer.get("notebooks") or {}).get(stem) or {}):
            return f"{label} {dotted}{key}" if label == "--set" else f"{label}: {dotted}{key}"
        if key in layer:
            return f"{label} {key}" if label == "--set" else f"{label}: {key}"
    return f"profile {profile_name}: {key}"


def check_models(profile_name: str, profile: Mapping[str, Any], overrides: Mapping[str, Any] | None,
                 chapters: Mapping[str, tuple[Mapping[str, Any], Path]]) -> None:
    """Refuse, in one :class:`StereoprobeError` naming the profile key, the model and the chapter, a model that a
    chapter cannot use (:func:`problem`). ``chapters``: notebook stem → (the parameters it receives, the folder it
    runs in, from which relative model folders are read)."""
    seen: set[tuple[str, str]] = set()
    for stem, (params, base) in chapters.items():
        for key, value in params.items():
            needs = MODEL_KEYS.get(key)
            if needs is None:
                continue
            for name in _names(value):
                if (name, needs) in seen:
                    continue
                seen.add((name, needs))
                why = problem(name, needs, base)
                if why:
                    where = _origin(key, stem, profile_name, profile, overrides)
                    raise StereoprobeError(
                        f"{where} names {name!r}, which is {why}; the chapter {stem} needs {_NEEDS[needs]} there: "
                        "name such a model in that key (nothing was executed).")
