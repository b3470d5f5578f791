"""The vendored word tokenizer (stereoprobe.sodapop.treebank) against nltk 3.7's own output.

The golden file ``sodapop_treebank_nltk37.jsonl`` is made by running this file as a script under nltk 3.7,
from the repository's root: ``python3 -m venv /tmp/nltk37 && /tmp/nltk37/bin/pip install nltk==3.7 &&
/tmp/nltk37/bin/python tests/test_sodapop_treebank.py``. It tokenizes the tricky strings below and every
answer, context and compat window ("{context} Bethany is {correct answer}") of the shipped Social IQa slice
with ``nltk.word_tokenize(text, preserve_line=True)`` (Punkt's data cannot be downloaded here). Each group
is checked whole through one SHA-256 digest of its tokens; the tricky strings, and the answers with
characters other than letters, digits, spaces and ``.,!?``, are also stored with their tokens.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

FIXTURE = Path(__file__).with_name("sodapop_treebank_nltk37.jsonl")
SLICE = Path(__file__).parents[1] / "src" / "stereoprobe" / "data" / "sodapop" / "social_iqa_dev_bethany.jsonl"

TRICKY = [
    "'sfo", "'Sfo", "I'm 'sure' it's 'sfo's", "Bethany's.", "Bethany's friend", "the patients' rights", "Jesse's'",
    "JOHN'S", "IT'S", "'S", "O'Neil", "o'clock", "y'all", "y'know", "ma'am", "'em", "'cause", "'bout", "'90s",
    "the '80s were fun", "rock 'n' roll", "rock'n'roll", "Amy is 'nice", "Amy is ' nice", "'", "''", "'''", '"',
    "can't", "Can't", "cannot", "CANNOT", "can't've", "won't", "don't", "ain't", "isn't it?", "she'd've", "I'm",
    "they'll", "we've", "you're", "he'd", "gonna", "Gonna go", "wanna go", "wanna", "gimme", "lemme", "gotta",
    "'tis", "It was 'twas", "d'ye", "more'n", "whaddya", "whatcha",
    "'quoted'", '"double quoted"', 'He said "no".', "“curly”", "‘single curly’", "it’s", "«chevron»",
    "``backticks''", "Wait... what?", "so..", "Hmm....", "…", "(parens)", "[brackets]", "{braces}", "<angle>",
    "end.)", "end.'", "end.\"", "well-known", "self-aware--really", "en–dash", "em—dash", "figure‒dash",
    "horizontal―bar", "3.88", "$3.88", "3,36", "1,000,000", "50%", "#1", "@user", "a&b", "e.g. this", "U.S.",
    "Mr. Smith went.", "Two sentences. Here.", "http://www.example.com/path?q=1&r=2", "https://nltk.org.",
    "mail a.b@c.com", "a;b:c", "10:30", "what?!", "*starred*", "John's\tgood", "new\nline's\nword",
    "  spaces  ", "", "Amy felt bad. Amy is 'sfo kind", "the dog's bone's", "Amy is very kind and talkative person.",
]


def corpus() -> dict[str, list[str]]:
    """The strings to compare: tricky ones, and the slice's answers, contexts and compat windows (sorted, distinct)."""
    records = [json.loads(line) for line in SLICE.read_text(encoding="utf-8").splitlines() if line.strip()]
    windows = {f"{r['context']} Bethany is {r['answer' + r['correct']]}" for r in records}
    return {"tricky": TRICKY, "answers": sorted({r[f"answer{c}"] for r in records for c in "ABC"}),
            "contexts": sorted({r["context"] for r in records}), "windows": sorted(windows)}


def plain(text: str) -> bool:
    return re.fullmatch(r"[A-Za-z0-9 .,!?]*", text) is not None


def digest(tokenized) -> str:
    h = hashlib.sha256()
    for tokens in tokenized:
        h.update("\x1f".join(tokens).encode() + b"\x1e")
    return h.hexdigest()


def golden(tokenize) -> dict:
    """Per group: the stored cases (text, tokens) and the digest of the tokens of every string."""
    out = {}
    for group, texts in corpus().items():
        tokens = [tokenize(t) for t in texts]
        out[group] = {"n": len(texts), "sha256": digest(tokens),
                      "cases": [[t, k] for t, k in zip(texts, tokens) if group == "tricky" or group == "answers" and not plain(t)]}
    return out


def read_fixture() -> tuple[dict, dict]:
    """(header, per group {"n", "sha256", "cases"}) of the golden file: one JSON object per line."""
    header, *rows = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    groups = {r["group"]: {"n": r["n"], "sha256": r["sha256"], "cases": []} for r in rows if "sha256" in r}
    for r in rows:
        if "tokens" in r:
            groups[r["group"]]["cases"].append([r["text"], r["tokens"]])
    return header, groups


def test_vendored_rules_equal_nltk_37():
    from stereoprobe.sodapop import treebank

    header, stored = read_fixture()
    assert header["nltk"] == "3.7" and set(stored) == {"tricky", "answers", "contexts", "windows"}
    mine = golden(treebank.tokenize)
    for group, want in stored.items():
        for (text, tokens), (text2, mine_tokens) in zip(want["cases"], mine[group]["cases"], strict=True):
            assert (text2, mine_tokens) == (text, tokens)
        assert (mine[group]["n"], mine[group]["sha256"]) == (want["n"], want["sha256"]), group


def test_word_tokenize_modes(monkeypatch):
    """Line mode: the rules on the whole string; punkt mode: the installed Punkt splits, the rules run per sentence."""
    import nltk.tokenize

    from stereoprobe.sodapop import distractors as D, treebank

    text = "Amy felt bad. Amy is 'sfo kind"
    for mode, sentences in (("line", [text]), ("punkt", ["Amy felt bad.", "Amy is 'sfo kind"])):
        monkeypatch.setattr(D, "tokenizer_mode", lambda: mode)
        monkeypatch.setattr(nltk.tokenize, "sent_tokenize", lambda t, language="english": sentences)
        D.word_tokenize.cache_clear()
        assert D.word_tokenize(text) == tuple(t for s in sentences for t in treebank.tokenize(s))
        assert "'sfo" in D.word_tokenize(text) and D.tokenizer_id().startswith(treebank.RULES_ID)
    assert D.tokenizer_id() == f"{treebank.RULES_ID}/punkt-nltk{nltk.__version__}"
    D.word_tokenize.cache_clear()


def test_cache_key_records_the_tokenizer(monkeypatch):
    from stereoprobe.sodapop import distractors as D

    keys = set()
    for ident in ("treebank-nltk3.7-vendored-v1/line", "treebank-nltk3.7-vendored-v2/line",
                  "treebank-nltk3.7-vendored-v1/punkt-nltk3.10.3"):
        monkeypatch.setattr(D, "tokenizer_id", lambda ident=ident: ident)
        keys.add(D.config_key(D.GenerationConfig(), "model"))
    assert len(keys) == 3


if __name__ == "__main__":  # regenerate the golden file under nltk 3.7
    import nltk
    from nltk.tokenize import word_tokenize

    assert nltk.__version__ == "3.7", f"run this under nltk 3.7, not {nltk.__version__}"
    groups = golden(lambda t: word_tokenize(t, preserve_line=True))
    rows = [{"comment": "nltk 3.7's word_tokenize(text, preserve_line=True) of the strings of tests/"
                        "test_sodapop_treebank.py:corpus(); made by running that file as a script under nltk 3.7 "
                        "(see its docstring). Per group: the number of strings, the SHA-256 of all their tokens, "
                        "then the tricky strings and the answers with characters other than letters, digits, spaces and "
                        ".,!? with their tokens.",
             "nltk": nltk.__version__}]
    for g, v in groups.items():
        rows += [{"group": g, "n": v["n"], "sha256": v["sha256"]}]
        rows += [{"group": g, "text": t, "tokens": k} for t, k in v["cases"]]
    FIXTURE.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {FIXTURE}: " + ", ".join(f"{g}: {v['n']} strings, {len(v['cases'])} stored" for g, v in groups.items()))


def test_skipping_rules_that_cannot_match_changes_no_token() -> None:
    """:func:`tokenize` skips a rule whose needed characters are absent; every rule applied gives the same tokens:
    on the golden corpus, on every rule's trigger characters in random company, and on case-insensitive lookalikes
    (the Kelvin sign, the long s and the dotless i match k, s and i in a case-insensitive rule)."""
    import random

    from stereoprobe.sodapop import treebank

    texts = [*TRICKY, *(t for group in corpus().values() for t in group)]
    pieces = [*"«“‘„`\"'.:,;@#$%&?!*[]{}()<>-–— \t", "''", "``", "...", "--", "n't", "N'T", "'s", "'S", "'ll", "'re",
              "cannot", "CanNot", "d'ye", "gimme", "gonna", "GOTTA", "lemme", "more'n", "wanna", " 'tis", " 'Twas",
              "'tiſ", "\u212aan", "gonnaı", "ſ", "ı", "\u0130", "a", "Bethany", "is", "3", "10", "x"]
    rng = random.Random(0)
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(1, 12))) for _ in range(20_000)]
    for text in texts:
        assert treebank.tokenize(text) == treebank.tokenize_every_rule(text), repr(text)
