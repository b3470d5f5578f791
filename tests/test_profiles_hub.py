"""Every profile of params/ executed as its user would run it, with a stand-in hub (tests/standin_hub.py).

A reader with a GPU runs ``stereoprobe book --profile gpu``, which reads the paper's models from the Hugging Face
hub. Here every hub id the profiles name is a tiny random model of the right kind in a Hugging Face cache folder,
read offline (``HF_HUB_OFFLINE=1``) through the hub library's own code, and every profile runs on the CPU at the
smoke profile's sizes (its sample, its per-chapter sizes): every chapter must execute, show no traceback, and read
each of the profile's hub ids from the stand-in cache. A profile that names a model a chapter cannot use is refused
before any chapter runs (stereoprobe.book.heads), tested at the end.

The smoke profile itself runs in tests/test_book.py (with the worked solutions); it runs here too if it ever names a
hub id.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from stereoprobe.book import available_profiles, chapters, load_profile, notebook_parameters
from stereoprobe.book.execute import read_notebook
from stereoprobe.book.heads import MODEL_KEYS
from stereoprobe.paths import checkout_root

H = sys.modules["stereoprobe_test_standin_hub"]  # tests/standin_hub.py, loaded by tests/conftest.py

ROOT = checkout_root()
NOTEBOOKS = [c for c in chapters() if c.kind == "notebook"]
HUB_IDS = H.profile_hub_ids(ROOT / "params")  # {hub id: ["profile: key", …]}
SERVED = H.profile_served_names(ROOT / "params")  # {openai-api/<service>/<model>: ["profile: key", …]}

#: The top-level keys of params/smoke.yaml that size a run (the device too: these runs are on the CPU); every profile
#: runs with smoke's values of these and of smoke's per-notebook sizes.
SIZE_KEYS = ("sample", "n_boot", "smoke_models", "batch_tokens", "device", "precision")
#: Model lists cut to their first model: the zoo's minilm-nli-rand1 … rand7 have no committed part, and a run trains
#: each (about 8 minutes; book/scale.md). Only project models may be dropped (checked below).
FIRST_ONLY = {"biased_inferences": ("rand_finetuned",)}


def _profile_ids(profile: str) -> set[str]:
    return {i for i, where in HUB_IDS.items() if any(w.startswith(f"{profile}: ") for w in where)}


PROFILES = [p for p in available_profiles() if p != "smoke" or _profile_ids(p)]


def size_assignments(profile: str) -> list[str]:
    """The ``--set`` assignments that run ``profile`` at the smoke profile's sizes, its models kept."""
    smoke = load_profile("smoke")[1]
    data = load_profile(profile)[1]
    sets = [f"{k}={json.dumps(smoke[k])}" for k in SIZE_KEYS]
    sets += [f"{stem}.{k}={json.dumps(v)}" for stem, part in smoke.get("notebooks", {}).items() for k, v in part.items()]
    for stem, keys in FIRST_ONLY.items():
        for key in keys:
            names = ((data.get("notebooks") or {}).get(stem) or {}).get(key)
            if isinstance(names, list) and len(names) > 1:
                assert not any(H.is_hub_id(n) for n in names[1:]), f"{profile}: {stem}.{key} would drop hub ids"
                sets.append(f"{stem}.{key}={json.dumps(names[:1])}")
    changed = [s.split("=")[0] for s in sets if s.split("=")[0].split(".")[-1] in MODEL_KEYS]
    assert all(k.split(".")[-1] in FIRST_ONLY.get(k.split(".")[0], ()) for k in changed), \
        f"the size overrides change the models of {profile}: {changed}"
    return sets

#: An IPython startup file for the chapters' kernels (IPYTHONDIR): an audit hook (PEP 578) that logs every file of the
#: hub cache the kernel opens. It changes nothing of how the files are found or read.
AUDIT = '''
import os, sys
_cache, _log = os.environ["HF_HUB_CACHE"], os.environ["STANDIN_HUB_LOG"]
def _hub_opens(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        path = os.fsdecode(args[0])
        if path.startswith(_cache):
            with open(_log, "a", encoding="utf-8") as log:
                log.write(path + "\\n")
sys.addaudithook(_hub_opens)
'''


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The stand-in hub with every id of params/*.yaml, the stand-ins of its served models behind reference servers
    (``served``: the environment that points their services at them), and one STEREOPROBE_CACHE for the profiles'
    runs (fresh: no score of a stand-in is in it before its run, so every hub model is loaded; the zoo's models are
    merged once)."""
    H.require_standins(HUB_IDS)
    H.require_served_standins(SERVED)
    root = tmp_path_factory.mktemp("standin")
    snapshots = H.build_hub(root / "hub", sorted(HUB_IDS))
    with H.serve_standins(root / "served", sorted(SERVED)) as served:
        yield {"cache": root / "hub", "home": root / "hf-home", "snapshots": snapshots, "store": root / "stereoprobe",
               "served": served}


def _run_book(profile: str, hub: dict, tmp: Path, *extra: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    """``python -m stereoprobe.book --profile PROFILE --execute-only`` with the stand-in hub, offline; (the process,
    the hub files the chapters' kernels opened)."""
    ipython = tmp / "ipython"
    (ipython / "profile_default" / "startup").mkdir(parents=True)
    (ipython / "profile_default" / "startup" / "00-hub-audit.py").write_text(AUDIT, encoding="utf-8")
    log = tmp / "hub-opens.log"
    log.touch()
    env = {**os.environ, **H.hub_environment(hub["cache"], hub["home"]), **hub["served"],
           "STEREOPROBE_CACHE": str(hub["store"]),
           "STEREOPROBE_PROGRESS": "0", "IPYTHONDIR": str(ipython), "STANDIN_HUB_LOG": str(log)}
    cmd = [sys.executable, "-m", "stereoprobe.book", "--profile", profile, "--execute-only", "--keep-going",
           "--build-dir", str(tmp / "build"), "--root", str(ROOT), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=3600)
    return proc, log.read_text(encoding="utf-8").splitlines()


TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^\w*(Error|Exception): ", re.MULTILINE)


def _output_text(output: dict) -> str:
    if output.get("output_type") == "stream":
        return "".join(output.get("text", ""))
    data = output.get("data", {})
    return "".join("".join(data.get(kind, "")) for kind in ("text/plain", "text/html", "text/markdown"))


@pytest.mark.slow
@pytest.mark.profiles  # make test-profiles (6–9 minutes on 2 cores), run by the publish workflow before it builds
@pytest.mark.parametrize("profile", PROFILES)
def test_every_profile_executes_with_the_standin_hub(profile: str, hub: dict, tmp_path: Path) -> None:
    start = time.perf_counter()
    proc, opened = _run_book(profile, hub, tmp_path, *[a for s in size_assignments(profile) for a in ("--set", s)])
    seconds = time.perf_counter() - start
    print(f"profile {profile}: {len(NOTEBOOKS)} chapters in {seconds:.0f} s")
    assert proc.returncode == 0, f"profile {profile} failed:\n{proc.stderr[-4000:]}"
    written = [Path(line) for line in proc.stdout.splitlines() if line.endswith(".ipynb")]
    assert [p.name for p in written] == [f"{c.stem}.ipynb" for c in NOTEBOOKS], "not every chapter executed"
    for path in written:
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert nb["metadata"]["stereoprobe"]["profile"] == profile
        assert not nb["metadata"]["papermill"]["exception"]
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(c.get("execution_count") for c in code if "".join(c["source"]).strip()), f"{path.name}: unexecuted"
        errors = [o for c in code for o in c.get("outputs", []) if o["output_type"] == "error"]
        assert not errors, f"{profile} {path.name}: {errors[0].get('ename')}: {errors[0].get('evalue')}"
        shown = [_output_text(o) for c in code for o in c.get("outputs", []) if o.get("name") != "stderr"]
        traced = [t for t in shown if TRACEBACK.search(t)]
        assert not traced, f"{profile} {path.name} shows a traceback: {traced[0][:500]}"
    # every hub id of the profile was resolved through refs/main and read from that snapshot in the stand-in cache;
    # no other id was
    want = _profile_ids(profile)
    refs = {H.id_of(Path(p), hub["cache"]) for p in opened if p.endswith("/refs/main")}
    read = {H.id_of(Path(p), hub["cache"]) for p in opened if "/snapshots/" in p and p.endswith("/config.json")}
    assert refs == read == want, f"{profile}: hub ids resolved {sorted(refs)}, read {sorted(read)}, named {sorted(want)}"
    snapshots = [p for p in opened if "/snapshots/" in p]
    assert all(f"/snapshots/{H.revision_of(H.id_of(Path(p), hub['cache']))}/" in p for p in snapshots)


# --------------------------------------------------------------------------- the table of stand-ins


def test_every_hub_id_of_the_profiles_has_a_standin() -> None:
    H.require_standins(HUB_IDS)
    H.require_served_standins(SERVED)
    assert SERVED["openai-api/vllm/meta-llama/Llama-3.1-8B-Instruct"] == ["gpu: notebooks.chat_say.chat_models"]
    assert len(_profile_ids("gpu")) >= 17  # UnQover's 10 QA models and 5 masked LMs, 2 NLI classifiers
    for chapter in NOTEBOOKS:  # a chapter parameter naming a model is a key MODEL_KEYS knows (so its ids are found)
        for key, default in notebook_parameters(read_notebook(chapter.source)).items():
            if re.search(r"[\"'](zoo|lab|asset):", default):
                assert key in MODEL_KEYS, f"{chapter.stem}.{key} names models and is not in heads.MODEL_KEYS"


def test_a_profile_naming_a_new_hub_id_fails_with_the_list(tmp_path: Path) -> None:
    for path in (ROOT / "params").glob("*.yaml"):
        (tmp_path / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    mine = yaml.safe_load((tmp_path / "gpu.yaml").read_text(encoding="utf-8"))
    mine["lm_models"].append("my-org/my-masked-lm")
    mine["notebooks"]["biased_inferences"]["nli_models"].append("another/nli")
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(mine), encoding="utf-8")
    ids = H.profile_hub_ids(tmp_path)
    assert ids["my-org/my-masked-lm"] == ["mine: lm_models"]
    with pytest.raises(AssertionError, match=r"2 hub id\(s\) .* another/nli \(mine: notebooks.biased_inferences."
                                             r"nli_models\); my-org/my-masked-lm \(mine: lm_models\)$"):
        H.require_standins(ids)


#: What each stand-in is loaded as, and the profile-key kind (stereoprobe.book.heads.MODEL_KEYS) it must satisfy.
AS = {"qa": ("qa", "qa"), "mlm": ("mlm", "mlm"), "nli": ("nli", "nli"), "causal": ("causal", "chat")}

#: Run offline against the stand-in hub: every id loaded by its hub id with stereoprobe.models.load, checked by
#: stereoprobe.book.heads.problem, a chat model's prompt rendered, an NLI model's entailment logit found.
LOAD_ALL = """
import json, sys
from stereoprobe.book.heads import problem
from stereoprobe.causal import chat_prompt
from stereoprobe.models import load, local_folder
from stereoprobe.nli.measures import label_indices
for hub_id, head, kind in json.loads(sys.argv[1]):
    m = load(hub_id, head, device="cpu")
    extra = ""
    if head == "causal":
        extra = chat_prompt(m.tokenizer, "Who was a nurse?")
    if head == "nli":
        extra = m.model.config.id2label[label_indices(m.model.config.id2label)[0]]
    print(json.dumps([hub_id, m.path, type(m.model).__name__, local_folder(hub_id).name, problem(hub_id, kind), extra]))
"""


def test_the_standins_are_what_their_ids_are(tmp_path: Path) -> None:
    """Every stand-in of the table as the hub library finds it offline: its head, its labels in the real model's
    order, its chat template, the cache's layout; loaded by stereoprobe.models.load through its hub id."""
    snapshots = H.build_hub(tmp_path / "hub")
    assert set(snapshots) == set(H.STANDINS) >= set(HUB_IDS)
    seen = {i: H.describe(s) for i, s in snapshots.items()}
    assert seen["roberta-large-mnli"]["architectures"] == ["RobertaForSequenceClassification"]
    assert seen["roberta-large-mnli"]["id2label"] == {"0": "CONTRADICTION", "1": "NEUTRAL", "2": "ENTAILMENT"}
    assert seen["cross-encoder/nli-deberta-v3-base"]["id2label"] == {"0": "contradiction", "1": "entailment",
                                                                      "2": "neutral"}
    assert {i for i, d in seen.items() if d["chat"]} == {i for i, s in H.STANDINS.items() if s.causal} == {
        "meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-7B-Instruct", "google/gemma-2-9b-it",
        "mistralai/Mistral-7B-Instruct-v0.3"}
    repo = H.repo_folder(tmp_path / "hub", "cross-encoder/nli-deberta-v3-base")
    assert repo.name == "models--cross-encoder--nli-deberta-v3-base"
    assert (repo / "refs" / "main").read_text() == snapshots["cross-encoder/nli-deberta-v3-base"].name
    bert = H.repo_folder(tmp_path / "hub", "bert-base-uncased")
    assert all(f.is_symlink() and f.resolve().parent == (bert / "blobs").resolve()
               for f in snapshots["bert-base-uncased"].iterdir())
    # downloaded without the pickle and TensorFlow weights its cached tree lists (hf download --include …)
    tree = json.loads((bert / "trees" / f"{H.revision_of('bert-base-uncased')}.json").read_text())["files"]
    assert {"pytorch_model.bin", "tf_model.h5", "model.safetensors", "config.json"} <= set(tree)
    assert not (snapshots["bert-base-uncased"] / "pytorch_model.bin").exists()
    assert (bert / "blobs" / tree["model.safetensors"]["lfs_sha256"]).is_file()

    todo = [[i, *AS[s.head]] for i, s in H.STANDINS.items()]
    env = {**os.environ, **H.hub_environment(tmp_path / "hub", tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-c", LOAD_ALL, json.dumps(todo)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = {row[0]: row[1:] for row in map(json.loads, proc.stdout.splitlines())}
    assert set(loaded) == set(H.STANDINS)
    for hub_id, (path, cls, snapshot, problem, extra) in loaded.items():
        assert path == hub_id and snapshot == H.revision_of(hub_id) and problem is None, (hub_id, problem)
        assert cls.endswith({"qa": "ForQuestionAnswering", "mlm": "ForMaskedLM", "nli": "ForSequenceClassification",
                             "causal": "ForCausalLM"}[H.STANDINS[hub_id].head]), (hub_id, cls)
    assert loaded["roberta-large-mnli"][4] == "ENTAILMENT" and loaded["cross-encoder/nli-deberta-v3-base"][4] == \
        "entailment"
    assert loaded["mistralai/Mistral-7B-Instruct-v0.3"][4] == "<s>[INST] Who was a nurse? [/INST]"
    assert "<|start_header_id|>user<|end_header_id|>" in loaded["meta-llama/Llama-3.1-8B-Instruct"][4]
    assert "<|im_start|>user" in loaded["Qwen/Qwen2.5-7B-Instruct"][4]
    assert "<start_of_turn>user" in loaded["google/gemma-2-9b-it"][4]


def test_a_hub_id_is_checked_from_the_hub_cache(tmp_path: Path) -> None:
    """The gpu profile with a QA key naming a hub NLI classifier: refused from its snapshot in the (stand-in) hub
    cache, offline, in one line with exit status 2, as the command line prints it."""
    H.build_hub(tmp_path / "hub", ["roberta-large-mnli"])
    env = {**os.environ, **H.hub_environment(tmp_path / "hub", tmp_path / "home")}
    proc = subprocess.run([sys.executable, "-m", "stereoprobe.book", "--profile", "gpu", "--execute-only",
                           "--build-dir", str(tmp_path / "build"), "--set", "models=[roberta-large-mnli]"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip() == (
        "error: --set models names 'roberta-large-mnli', which is a sequence classifier "
        "(RobertaForSequenceClassification); the chapter reasoning_errors needs an extractive-QA model "
        "(…ForQuestionAnswering) there: name such a model in that key (nothing was executed).")
    assert not (tmp_path / "build").exists()
