"""The Bias-NLI planted-bias lab: a static-embedding NLI model whose word vectors carry a *known*
occupation → gender bias, its control, and the projection that should undo it.

The paper's account of biased inferences (Dev et al. 2020, §1, §5) is: the word vectors of occupations
carry a gender component; the NLI model has learnt to use gender (a mother is a woman, not a man); so
"A nurse …" ⇒ "A woman …" stops being neutral. Removing the gender direction from every vector and
retraining should restore neutrality. The lab builds exactly that situation with the answer known:

* **the plant** (:func:`planted_embeddings`): GloVe, except that the vectors of :data:`PLANTED` (three
  occupations chosen arbitrarily, unlike any real stereotype) get a strong component along the lab's
  gender direction d = unit(mean female − mean male of :data:`FEMALE`/:data:`MALE`): their d-coordinate is
  set to ``strength`` × the mean d-coordinate of the female words. The **control** is plain GloVe.
* **the model** (:func:`lab_corpus`, :func:`lab_model`): the static NLI model of
  :mod:`stereoprobe.nli.static`, trained on the project's offline corpus plus gender pairs that teach it
  to use gender: "A queen is … ." ⇒ "A woman is … ." entailment, ⇒ "A man …" contradiction, "A tourist
  …" ⇒ "A woman …" neutral. No planted occupation occurs in training, so the biased and control models
  share their weights; they differ only in the planted rows of the embedding table.
* **the fix** (:func:`lab_model` with ``project=True``): d is projected out of every vector and the model
  is retrained. Then the planted rows equal the control's rows exactly, so the planted words must
  score as in the control — and the neutrality lost to the plant comes back.

:func:`planted_effect` compares the neutrality measures per occupation group (planted vs the rest)
across the three models; the tests assert the drop is confined to the planted words and that the
projection restores them.
"""

from __future__ import annotations

import itertools
import random

import numpy as np
import pandas as pd

from ..assets import Embeddings
from ..errors import StereoprobeError
from . import measures, projection
from ..corpora.examples import NLIExample, tokens
from .static import cached_train, default_corpus

#: Occupations (Bias-NLI probe words) that receive the planted female component.
PLANTED = ("surveyor", "geologist", "pharmacist")
#: Gendered training subjects (no Bias-NLI or UnQover probe word among them) and gender-free ones.
FEMALE = ("sister", "wife", "aunt", "queen", "bride", "niece", "grandmother", "princess", "nun", "waitress",
          "heroine", "widow", "girlfriend")
MALE = ("brother", "husband", "uncle", "king", "groom", "nephew", "grandfather", "prince", "monk", "widower",
        "boyfriend")
NEUTRAL = ("person", "tourist", "child", "traveler", "visitor", "passenger", "guest", "pedestrian", "spectator")
#: The Bias-NLI gendered hypothesis words.
HYP_FEMALE = ("woman", "lady", "girl")
HYP_MALE = ("man", "gentleman", "guy")
FRAMES = (
    "A {} is sitting on a bench .", "A {} is reading in the park .", "A {} walks to the station .",
    "A {} is cooking dinner .", "A {} is waiting for the bus .", "A {} is looking out of the window .",
    "A {} is crossing the street .", "A {} is laughing at a joke .", "A {} is standing in the rain .",
    "A {} is painting a fence .", "A {} sleeps on the sofa .", "A {} is climbing the stairs .",
    "A {} is drinking tea .", "A {} is writing a letter .", "A {} is carrying a basket .",
    "A {} is swimming in the lake .", "A {} is singing a song .", "A {} is watering the garden .",
)
DEFAULT_STRENGTH = 4.0
#: Copies of each gender pair in the training corpus, the offline-corpus share and the epochs. Measured:
#: with 1 copy, 51,200 corpus pairs and 4 epochs the model never learnt which gender a subject has (66% on
#: held-out gender pairs, E ≈ C ≈ 0.5 for "A queen …" ⇒ "A man …"); with 4 copies, 20,000 corpus pairs and
#: 8 epochs it does (94% held-out accuracy; about 2 minutes on one core).
GENDER_REPEAT = 4
LAB_N_TRAIN = 20_000
LAB_N_HELDOUT = 500
LAB_EPOCHS = 8


def lab_direction(embeddings: Embeddings) -> np.ndarray:
    """The lab's gender direction d: unit(mean of :data:`FEMALE` − mean of :data:`MALE`)."""
    diff = embeddings.matrix(list(FEMALE), "the lab's female words").mean(0) - \
        embeddings.matrix(list(MALE), "the lab's male words").mean(0)
    return projection.unit_rows(diff[None, :])[0]


def planted_embeddings(embeddings: Embeddings, words=PLANTED, strength: float = DEFAULT_STRENGTH) -> Embeddings:
    """A copy of ``embeddings`` whose ``words`` have their d-coordinate set to ``strength`` × the mean
    d-coordinate of the female words (d = :func:`lab_direction`); every other row is unchanged."""
    words = list(words)
    embeddings.matrix(words, "the planted words")
    d = lab_direction(embeddings)
    target = strength * float(embeddings.matrix(list(FEMALE)).mean(0) @ d)
    vectors = embeddings.vectors.copy()
    for w in words:
        i = embeddings.index[w]
        vectors[i] = vectors[i] + (target - float(vectors[i] @ d)) * d
    return Embeddings(list(embeddings.words), vectors)


def gender_pairs(seed: int = 0) -> list:
    """The lab's gender-teaching pairs: every frame × subject × gendered hypothesis word (shuffled)."""
    out = []
    for frame, (subject, group), hyp in itertools.product(
            FRAMES, [(s, "f") for s in FEMALE] + [(s, "m") for s in MALE] + [(s, "n") for s in NEUTRAL],
            HYP_FEMALE + HYP_MALE):
        if group == "n":
            label = "neutral"
        else:
            label = "entailment" if (hyp in HYP_FEMALE) == (group == "f") else "contradiction"
        article = "An" if subject[0] in "aeiou" else "A"
        out.append(NLIExample(frame.format(subject).replace("A ", f"{article} ", 1), frame.format(hyp).replace(
            "A ", "An " if hyp[0] in "aeiou" else "A ", 1), label, f"lab_gender_{group}"))
    random.Random(seed).shuffle(out)
    return out


def lab_corpus(n_train: int | None = None, n_heldout: int | None = None, seed: int = 0) -> tuple[list, list]:
    """(train, held-out): the offline NLI corpus plus :func:`gender_pairs` — 10% of them held out, the rest
    repeated :data:`GENDER_REPEAT` times."""
    kwargs = {k: v for k, v in (("n_train", n_train), ("n_heldout", n_heldout)) if v is not None}
    train, held = default_corpus(seed=seed, **kwargs)
    pairs = gender_pairs(seed)
    cut = len(pairs) // 10
    mixed = train + pairs[cut:] * GENDER_REPEAT
    random.Random(seed + 1).shuffle(mixed)
    return mixed, held + pairs[:cut]


def lab_model(embeddings: Embeddings, *, variant: str = "biased", project: bool = False, strength: float = DEFAULT_STRENGTH,
              n_train: int = LAB_N_TRAIN, n_heldout: int = LAB_N_HELDOUT, progress: bool = True, threads: int | None = 1,
              **settings):
    """The lab model ``variant`` ("biased": planted embeddings; "control": plain), trained on
    :func:`lab_corpus` (cached), with the lab direction projected out and retrained if ``project``.

    The training corpus never contains a planted word, so both variants share one training; the variant
    only decides which embedding table the model reads at test time (:meth:`StaticNLI.on_source`).
    """
    if variant not in ("biased", "control"):
        raise StereoprobeError(f"Unknown lab variant {variant!r}; choose 'biased' or 'control'.")
    train, held = lab_corpus(n_train, n_heldout)
    seen = {w for e in train for t in (e.premise, e.hypothesis) for w in tokens(t)} & set(PLANTED)
    if seen:
        raise StereoprobeError(f"Planted word(s) {sorted(seen)} occur in the lab's training corpus; the lab needs "
                               "them unseen.")
    directions = lab_direction(embeddings)[None, :] if project else None
    settings.setdefault("epochs", LAB_EPOCHS)
    model = cached_train(train, held, embeddings, directions=directions, name="lab-" + ("proj" if project else "orig"),
                         progress=progress, threads=threads, **settings)
    return model.on_source(planted_embeddings(embeddings, strength=strength)) if variant == "biased" else model


def planted_effect(probs: dict[str, pd.DataFrame], planted=PLANTED, n_boot: int = 1000, seed: int = 0) -> pd.DataFrame:
    """NN / FN / T:0.5 / T:0.7 (with CIs) of the planted occupations and of all the others, per model,
    with the mean entailment toward female and male words: one row per (model, words)."""
    rows = []
    for name, p in probs.items():
        is_planted = p["premise_word"].isin(list(planted)).to_numpy()
        for label, mask in (("planted", is_planted), ("other", ~is_planted)):
            part = p[mask]
            if part.empty:
                raise StereoprobeError(f"No {label} occupation in the scored pairs of {name}; score more pairs.")
            t = measures.neutrality(part, n_boot=n_boot, seed=seed)
            female = part["hypothesis_word"].isin(list(HYP_FEMALE)).to_numpy()
            rows.append({"model": name, "words": label, "pairs": len(part),
                         **{m: t.at[m, "value"] for m in t.index},
                         "NN_lo": t.at["NN", "lo"], "NN_hi": t.at["NN", "hi"],
                         "E | female word": part.loc[female, "entail"].mean(),
                         "E | male word": part.loc[~female, "entail"].mean(),
                         "C | male word": part.loc[~female, "contradiction"].mean()})
    return pd.DataFrame(rows)
