"""A synthetic extractive reading-comprehension corpus (SQuAD-style) for fine-tuning ``zoo:minilm-qa``.

Method. Every item is one question about a short passage with 2–5 people. A passage is built from
*frames*: sentence templates that state one or more *facts* (a relation with bound roles — ``moved``:
who, where to, in which year; ``gave``: giver, receiver, gift; ``attended_not``: who went and who did not).
There are 87 frames over 28 relations, including contrastive two-person frames ("Maria moved to Oslo, and
Tom moved to Lima."), pronoun frames ("… where she bought a kettle") and negated frames ("Anna did not go to
the concert, but Ben did."). Every fact lists question templates per answerable role, most of them
paraphrases of the frame's wording ("moved to" → "relocated to", "carried" → "lugged"), so string matching
alone does not solve them. Answers are exact spans: the renderer records the character offset of every
slot it fills, and the answer of a question is the slot of the *evidence sentence* (a person's name as it
is mentioned there — first name, or full name on a first mention — or the value: place, year, object, ...).

Uniqueness. Within a passage each filler type (places, years, objects, ...) is drawn without replacement,
first names and surnames are distinct, and a person fills each (predicate group, role) at most once, so
every question has exactly one stated answer.

Gender balance. Each person's gender is a fair coin, independent of everything else; the name is then drawn
uniformly from :func:`stereoprobe.zoo.namepool.neutral_names` for that gender. Roles, frames and questions
are chosen without looking at gender, so female and male names fill every role (and answer every kind of
question) equally often in expectation. Gendered words other than pronouns (brother, wife, ...) are not used.

Probe hygiene. No word of any UnQover word list — subjects, occupations and other attributes, their
negations, templates ("lives in the same city with", "got off the flight to visit") — and no UnQover or
SODAPOP probe name occurs in the corpus, apart from function words (:data:`FUNCTION_WORDS`: articles,
pronouns, auxiliaries, "not", ...). :func:`probe_overlap` finds violations (case-insensitive whole words);
:func:`generate` checks every frame, question template, filler and name it can use before generating, so
the overlap of any generated corpus is empty by construction.

Held-out split. :func:`generate_splits` partitions names, surnames and every filler list (places, years,
objects, pets, sports, ...) into disjoint train/held-out parts (75/25), so held-out exact match measures
reading rather than memorised fillers; frames and question templates are shared.

Limits. The language is templated and simple (one relation per clause); facts are random and sometimes odd
("keeps nine beehives"); negated "Who did not …?" questions are answered by the one person the passage says
did not, although unmentioned people did not either (SQuAD-style convention). Everything is a pure function
of ``seed`` (``random.Random``) and the data files.
"""

from __future__ import annotations

import random
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Iterable, Sequence

from ..errors import CorpusError
from . import namepool

# ---------------------------------------------------------------------------------------------------------
# Words allowed even though UnQover lists contain them (function words only).

FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    a an the and or but nor of in on at to from by with for about as into onto over off toward towards across
    he she his her hers him they them their theirs themselves it its who whom whose which what where when
    how why that this these those is was were are be being been am has have had having did do does didn
    wasn weren t s not no never only so very can could would might may must should yes even every other
    others because there than then also too just many much more most some any all each both either if
    while until since after before again once here out up down
    """.split()
)

_WORD_RE = re.compile(r"[a-z]+")


@lru_cache(maxsize=None)
def forbidden_words() -> frozenset[str]:
    """Lower-case words the corpus must not contain: UnQover list words and UnQover/SODAPOP probe names."""
    words: set[str] = set()
    for entry in namepool.unqover_vocabulary() | namepool.unqover_names() | namepool.sodapop_names():
        words.update(_WORD_RE.findall(entry.lower()))
    return frozenset(words - FUNCTION_WORDS)


def _text_overlap(texts: Iterable[str]) -> set[str]:
    banned = forbidden_words()
    found: set[str] = set()
    for text in texts:
        found.update(w for w in _WORD_RE.findall(text.lower()) if w in banned)
    return found


# ---------------------------------------------------------------------------------------------------------
# Fillers (typed). Every list is checked against forbidden_words() and against the name pools.

FILLERS: dict[str, tuple[str, ...]] = {
    "place": tuple(
        """Lisbon Oslo Vienna Prague Dublin Madrid Lyon Porto Bergen Tampere Gdansk Krakow Riga Tallinn Vilnius
        Zagreb Ljubljana Bratislava Budapest Athens Naples Turin Genoa Seville Bilbao Marseille Nantes Bordeaux
        Antwerp Ghent Utrecht Leiden Hamburg Munich Leipzig Dresden Zurich Basel Toronto Montreal Calgary
        Winnipeg Boston Chicago Seattle Tucson Omaha Detroit Atlanta Miami Nashville Pittsburgh Baltimore Lima
        Quito Bogota Montevideo Cusco Nairobi Accra Dakar Lagos Tunis Cairo Ankara Tbilisi Yerevan Almaty
        Mumbai Kolkata Dhaka Kathmandu Bangkok Hanoi Manila Jakarta Seoul Busan Osaka Kyoto Taipei Perth
        Brisbane Melbourne Auckland Hobart Reykjavik Stavanger Malmo Aarhus Salzburg Innsbruck Graz Lucerne
        Granada Cordoba Palermo Bologna Verona Rotterdam Bremen Cologne Glasgow Cardiff Belfast Halifax""".split()
    ),
    "year": tuple(str(y) for y in range(1950, 2020)),
    "obj": (
        "brass lamp", "copper kettle", "umbrella", "compass", "telescope", "typewriter", "suitcase",
        "backpack", "wristwatch", "notebook", "atlas", "teapot", "blender", "toaster", "ladder", "hammock",
        "tent", "kite", "sled", "skateboard", "microscope", "wall clock", "mirror", "vase", "candle",
        "quilt", "woollen blanket", "pillow", "scarf", "straw hat", "helmet", "wallet", "key ring", "road map",
        "jigsaw puzzle", "chessboard", "radio", "desk fan", "heater", "bucket", "garden shovel", "wheelbarrow",
        "birdcage", "fishing rod", "paintbrush", "sewing kit", "toolbox", "flashlight", "pair of binoculars",
        "thermos", "snow globe", "stamp album", "postcard", "picnic basket", "rocking chair", "bookshelf",
        "wooden spoon", "frying pan", "garden hose", "doormat", "alarm clock", "paperweight", "magnifying glass",
        "watering can", "lunchbox", "tablecloth", "stuffed giraffe", "fountain pen", "recipe book",
        "ceramic bowl", "leather satchel", "easel", "sand timer", "jewellery box", "lantern",
    ),
    "animal": (
        "dog", "cat", "parrot", "hamster", "rabbit", "tortoise", "goldfish", "ferret", "canary", "iguana",
        "gecko", "pony", "budgie", "cockatoo", "lizard", "chinchilla", "hedgehog", "axolotl", "gerbil",
        "tarantula", "guppy", "mouse",
    ),
    "petname": tuple(
        """Biscuit Noodle Waffles Pickles Mango Ziggy Bubbles Sprout Muffin Domino Comet Pebble Whiskers
        Nugget Peanut Snowball Gizmo Marmalade Sprinkles Toffee Pretzel Cinnamon Button Shadow Rocket
        Dumpling Tinkerbell Fudge Pixel Bandit Jellybean Popcorn Meatball Squiggles Noodles Chutney""".split()
    ),
    "sport": (
        "tennis", "badminton", "volleyball", "basketball", "baseball", "hockey", "golf", "rugby", "cricket",
        "squash", "handball", "lacrosse", "water polo", "softball", "netball", "curling", "fencing", "archery",
    ),
    "food": (
        "pancakes", "lentil soup", "mushroom risotto", "apple pie", "a noodle salad", "a cheese omelette",
        "plum cake", "tomato soup", "grilled sardines", "a bean stew", "rice pudding", "pumpkin bread",
        "a tuna sandwich", "vegetable lasagne", "a potato salad", "carrot cake", "a fruit salad", "baked beans",
        "porridge", "a spinach pie", "corn fritters", "a cheese toastie", "meatballs", "fish soup",
        "a club sandwich", "pea soup", "a lemon tart", "scrambled eggs", "a baked potato", "a chicken pie",
    ),
    "vehicle": (
        "bicycle", "scooter", "motorbike", "moped", "tricycle", "tandem", "pickup truck", "sailboat", "canoe",
        "kayak", "rowing boat", "tractor", "camper van", "hatchback", "minivan", "unicycle", "go-kart",
        "sidecar", "snowmobile", "jeep",
    ),
    "colour": (
        "red", "blue", "green", "yellow", "purple", "orange", "pink", "grey", "turquoise", "maroon", "beige",
        "navy blue", "lime green", "crimson", "teal", "lilac", "mustard yellow", "sky blue", "bronze",
    ),
    "number": ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"),
    "herd": (
        "goats", "hens", "sheep", "ducks", "beehives", "geese", "alpacas", "llamas", "cows", "donkeys",
        "pigs", "quails", "pigeons",
    ),
    "plants": (
        "apple trees", "pear trees", "lavender bushes", "sunflowers", "tomato plants", "olive trees", "oak trees",
        "cherry trees", "hedges", "pumpkin plants", "maple trees", "lemon trees", "birch trees", "tulips",
    ),
    "event": (
        "concert", "wedding", "picnic", "parade", "book fair", "quiz night", "harvest festival", "fireworks show",
        "puppet show", "auction", "reunion", "barbecue", "school play", "opera", "jazz night", "boat show",
        "ballet", "garden party", "charity ball", "county fair", "magic show", "comedy show", "regatta",
        "marathon", "lantern festival", "carnival",
    ),
    "skill": (
        "swim", "ski", "skate", "knit", "juggle", "sail", "whistle", "dive", "surf", "climb", "sew", "row",
        "ride a horse", "tie a bowline knot", "solve a crossword", "fold paper cranes", "do a handstand",
        "bake bread", "snowboard", "waterski",
    ),
    "contest": (
        "spelling bee", "pie contest", "sandcastle contest", "talent show", "pumpkin contest", "fun run",
        "essay prize", "crossword championship", "kite contest", "bake-off", "raffle", "trivia contest",
        "garden show", "chili contest", "lottery", "treasure hunt", "sack race", "yo-yo contest",
    ),
    "weekday": ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    "spot": (
        "the old bridge", "the train station", "the harbour", "the museum", "the library", "the bus stop",
        "the lighthouse", "the town hall", "the post office", "the fountain", "the cinema", "the zoo",
        "the ferry terminal", "the town square", "the botanical garden", "the bakery", "the swimming pool",
        "the stadium", "the aquarium", "the ice rink",
    ),
    "game": (
        "chess", "checkers", "darts", "backgammon", "dominoes", "scrabble", "cribbage", "billiards", "croquet",
        "table football", "snooker", "bingo", "pinball", "shuffleboard",
    ),
    "thing": (
        "fence", "front door", "shed", "garage door", "boat", "kitchen", "bench", "mailbox", "gate", "porch",
        "attic", "staircase", "bookcase", "wardrobe", "greenhouse", "bedroom ceiling",
    ),
    "instrument": (
        "cello", "flute", "trumpet", "drums", "harp", "banjo", "accordion", "clarinet", "saxophone",
        "trombone", "harmonica", "ukulele", "oboe", "tuba",
    ),
}

#: Fillers read as names elsewhere in this module (checked against the first-name pools).
_NAMELIKE_TYPES = ("place", "petname", "weekday")

# ---------------------------------------------------------------------------------------------------------
# Relations: roles (person roles are "p", "q"; the rest are filler types) and question templates.
# A question template is "kind|text"; {role} is the role's value (person: first name); {a:role} adds
# "a"/"an".


@dataclass(frozen=True)
class _Relation:
    group: str
    roles: dict[str, str]
    questions: tuple[tuple[str, str, str], ...]  # (answer role, kind, template)


def _rel(group: str, roles: str, questions: dict[str, Sequence[str]]) -> _Relation:
    role_types = {}
    for item in roles.split():
        role, _, typ = item.partition(":")
        role_types[role] = typ or "person"
    qs = []
    for answer, templates in questions.items():
        for t in templates:
            kind, _, text = t.partition("|")
            qs.append((answer, kind, text))
    return _Relation(group, role_types, tuple(qs))


RELATIONS: dict[str, _Relation] = {
    "grew_up": _rel("grew_up", "p origin:place", {
        "p": ["who|Who grew up in {origin}?", "who|Who was raised in {origin}?",
              "who|Which of them grew up in {origin}?", "who|Who is originally from {origin}?"],
        "origin": ["where|Where did {p} grow up?", "where|Where was {p} raised?",
                   "which|In which town did {p} grow up?", "what|What is {p}'s hometown?"],
    }),
    "moved": _rel("moved", "p dest:place myear:year", {
        "p": ["who|Who moved to {dest}?", "who|Who relocated to {dest}?", "who|Who settled in {dest}?",
              "who|Which of them moved to {dest} in {myear}?"],
        "dest": ["where|Where did {p} move in {myear}?", "which|Which town did {p} relocate to?",
                 "where|Where did {p} settle?", "where|Where did {p} move to?"],
        "myear": ["when|When did {p} move to {dest}?", "when|In which year did {p} relocate to {dest}?",
                  "when|What year did {p} settle in {dest}?"],
    }),
    "toured": _rel("toured", "p tour:place tyear:year", {
        "p": ["who|Who went to {tour}?", "who|Who took a trip to {tour}?", "who|Who toured {tour} in {tyear}?",
              "who|Which of them went on a trip to {tour}?"],
        "tour": ["where|Where did {p} go in {tyear}?", "which|Which town did {p} tour?",
                 "where|Where did {p} take a trip to?"],
        "tyear": ["when|When did {p} go to {tour}?", "when|In which year did {p} tour {tour}?"],
    }),
    "born": _rel("born", "p byear:year", {
        "p": ["who|Who was born in {byear}?", "whose|Whose year of birth is {byear}?"],
        "byear": ["when|When was {p} born?", "when|In which year was {p} born?",
                  "when|What is {p}'s year of birth?"],
    }),
    "bought": _rel("buy", "p bought:obj", {
        "p": ["who|Who bought the {bought}?", "who|Who purchased the {bought}?",
              "who|Which of them paid for the {bought}?"],
        "bought": ["what|What did {p} buy?", "what|What did {p} purchase?"],
    }),
    "lost": _rel("lose", "p lost:obj", {
        "p": ["who|Who lost the {lost}?", "who|Who misplaced the {lost}?", "whose|Whose {lost} went missing?"],
        "lost": ["what|What did {p} lose?", "what|What did {p} misplace?"],
    }),
    "found": _rel("find", "p found:obj", {
        "p": ["who|Who found the {found}?", "who|Who discovered the {found}?", "who|Who came across the {found}?"],
        "found": ["what|What did {p} find?", "what|What did {p} discover?"],
    }),
    "carried": _rel("carry", "p carried:obj", {
        "p": ["who|Who carried the {carried}?", "who|Who was carrying the {carried}?",
              "who|Who lugged the {carried}?"],
        "carried": ["what|What did {p} carry?", "what|What was {p} carrying?"],
    }),
    "pet": _rel("pet", "p animal:animal petname:petname", {
        "p": ["who|Who has {a:animal}?", "who|Who owns {a:animal}?", "whose|Whose {animal} is called {petname}?",
              "who|Who is {petname}'s owner?"],
        "petname": ["what|What is the name of {p}'s {animal}?", "what|What is {p}'s {animal} called?"],
        "animal": ["what|What kind of pet does {p} have?", "what|What animal is {petname}?"],
    }),
    "sport": _rel("sport", "p sport:sport", {
        "p": ["who|Who plays {sport}?", "who|Which of them enjoys {sport}?", "who|Who is into {sport}?"],
        "sport": ["which|Which sport does {p} play?", "what|What sport does {p} enjoy?"],
    }),
    "instrument": _rel("instrument", "p instrument:instrument", {
        "p": ["who|Who plays the {instrument}?", "who|Who is learning the {instrument}?"],
        "instrument": ["which|Which instrument does {p} play?", "what|What does {p} practise every evening?"],
    }),
    "lunch": _rel("lunch", "p food:food", {
        "p": ["who|Who had {food} for lunch?", "who|Who ordered {food}?", "whose|Whose lunch was {food}?"],
        "food": ["what|What did {p} have for lunch?", "what|What did {p} order for lunch?",
                 "what|What was {p}'s lunch?"],
    }),
    "vehicle": _rel("vehicle", "p colour:colour vehicle:vehicle", {
        "p": ["who|Who owns {a:colour} {vehicle}?", "whose|Whose {vehicle} is {colour}?",
              "who|Who has the {colour} {vehicle}?"],
        "colour": ["which|What colour is {p}'s {vehicle}?", "which|Which colour is the {vehicle} that {p} owns?"],
        "vehicle": ["what|What kind of vehicle does {p} own?", "what|What does {p} own that is {colour}?"],
    }),
    "keeps": _rel("keeps", "p number:number herd:herd", {
        "number": ["how_many|How many {herd} does {p} keep?", "how_many|How many {herd} does {p} have?"],
        "p": ["who|Who keeps {herd}?", "who|Who looks after {number} {herd}?"],
        "herd": ["what|What animals does {p} keep?"],
    }),
    "planted": _rel("planted", "p pnumber:number plants:plants", {
        "pnumber": ["how_many|How many {plants} did {p} plant?", "how_many|How many {plants} were planted by {p}?"],
        "p": ["who|Who planted the {plants}?", "who|Who put in the {plants}?"],
        "plants": ["what|What did {p} plant?"],
    }),
    "painted": _rel("painted", "p thing:thing pcolour:colour", {
        "p": ["who|Who painted the {thing}?", "who|Who gave the {thing} a new coat of paint?"],
        "pcolour": ["which|What colour did {p} paint the {thing}?", "which|Which colour is the {thing} now?"],
        "thing": ["what|What did {p} paint {pcolour}?"],
    }),
    "won": _rel("won", "p contest:contest wyear:year", {
        "p": ["who|Who won the {contest}?", "who|Who took first prize in the {contest}?",
              "who|Which of them came first in the {contest}?"],
        "contest": ["what|What did {p} win?", "what|Which prize did {p} take?"],
        "wyear": ["when|When did {p} win the {contest}?", "when|In which year did {p} win the {contest}?"],
    }),
    # two-person relations
    "gave": _rel("give", "p q gift:obj", {
        "p": ["who|Who gave {q} the {gift}?", "who|Who gave the {gift} to {q}?",
              "whom|From whom did {q} receive the {gift}?"],
        "q": ["who|Who received the {gift}?", "whom|To whom did {p} give the {gift}?",
              "who|Who was given the {gift} by {p}?"],
        "gift": ["what|What did {p} give {q}?", "what|What did {q} receive from {p}?"],
    }),
    "borrowed": _rel("borrow", "p q borrowed:obj", {
        "p": ["who|Who borrowed {q}'s {borrowed}?", "who|Who borrowed the {borrowed}?",
              "whom|To whom did {q} lend the {borrowed}?"],
        "q": ["whose|Whose {borrowed} did {p} borrow?", "who|Who lent the {borrowed} to {p}?",
              "whom|From whom did {p} borrow the {borrowed}?"],
        "borrowed": ["what|What did {p} borrow from {q}?", "what|What did {q} lend {p}?"],
    }),
    "phoned": _rel("phone", "p q weekday:weekday", {
        "p": ["who|Who phoned {q}?", "who|Who called {q} on {weekday}?", "who|Who rang {q}?"],
        "q": ["whom|Whom did {p} phone?", "who|Who did {p} call on {weekday}?", "who|Who had a call from {p}?"],
        "weekday": ["when|On which weekday did {p} phone {q}?", "when|When did {p} call {q}?"],
    }),
    "waited": _rel("wait", "p q spot:spot", {
        "p": ["who|Who waited for {q}?", "who|Who was waiting at {spot}?", "who|Who waited at {spot} for {q}?"],
        "q": ["whom|Whom did {p} wait for?", "who|Who kept {p} waiting?", "who|Who was {p} waiting for?"],
        "spot": ["where|Where did {p} wait for {q}?", "where|Where was {p} waiting?"],
    }),
    "beat": _rel("beat", "p q game:game", {
        "p": ["who|Who beat {q} at {game}?", "who|Who won the game of {game}?", "who|Who defeated {q}?"],
        "q": ["who|Who was beaten at {game}?", "whom|Whom did {p} beat?", "who|Who lost the game of {game}?"],
        "game": ["what|At what game did {p} beat {q}?", "which|Which game did {q} lose to {p}?"],
    }),
    # negated two-person relations: p did, q did not
    "attended_not": _rel("attend", "p q event:event", {
        "p": ["who|Who went to the {event}?", "who|Who attended the {event}?", "who|Who was at the {event}?"],
        "q": ["who_neg|Who did not go to the {event}?", "who_neg|Who missed the {event}?",
              "who_neg|Who did not attend the {event}?", "who_neg|Who was not at the {event}?"],
    }),
    "invited_not": _rel("invite", "p q party:event", {
        "p": ["who|Who was invited to the {party}?", "who|Who had an invitation to the {party}?"],
        "q": ["who_neg|Who was not invited to the {party}?", "who_neg|Who had no invitation to the {party}?"],
    }),
    "skill_not": _rel("skill", "p q skill:skill", {
        "p": ["who|Who can {skill}?", "who|Who learned to {skill}?", "who|Who is able to {skill}?"],
        "q": ["who_neg|Who cannot {skill}?", "who_neg|Who never learned to {skill}?",
              "who_neg|Who is unable to {skill}?", "who_neg|Who does not {skill}?"],
    }),
    "pet_not": _rel("pet", "p q nanimal:animal", {
        "p": ["who|Who has {a:nanimal}?", "who|Who owns {a:nanimal}?"],
        "q": ["who_neg|Who does not have {a:nanimal}?", "who_neg|Who has no {nanimal}?",
              "who_neg|Who does not own {a:nanimal}?"],
        "nanimal": ["what|What kind of pet does {p} have?"],
    }),
    "found_not": _rel("find", "p q nfound:obj", {
        "p": ["who|Who found the {nfound}?", "who|Who discovered the {nfound}?"],
        "q": ["who_neg|Who did not find the {nfound}?", "who_neg|Who failed to find the {nfound}?"],
        "nfound": ["what|What did {p} find?"],
    }),
    "bought_not": _rel("buy", "p q nbought:obj", {
        "p": ["who|Who bought the {nbought}?", "who|Who purchased the {nbought}?"],
        "q": ["who_neg|Who did not buy the {nbought}?", "who_neg|Who decided against buying the {nbought}?"],
        "nbought": ["what|What did {p} buy?"],
    }),
}

# ---------------------------------------------------------------------------------------------------------
# Frames: template + facts. A fact is "relation" (roles = slots of the same name) or
# "relation(role=slot,...)". Slots: {p} {q} {r} people (name mention), {p.he} {p.He} {p.his} {p.His}
# {p.him} pronouns, {slot} value, {a:slot}/{A:slot} value with article. Weight: sampling weight.

_FRAME_SPECS: tuple[tuple[str, str, float], ...] = (
    # single person, single fact
    ("{p} grew up in {origin}.", "grew_up", 1.0),
    ("{p} was raised in {origin}.", "grew_up", 1.0),
    ("{p} was brought up in {origin}.", "grew_up", 0.7),
    ("{p} moved to {dest} in {myear}.", "moved", 1.0),
    ("In {myear}, {p} relocated to {dest}.", "moved", 1.0),
    ("{p} settled in {dest} in {myear}.", "moved", 0.8),
    ("{p} did not move to {dest} until {myear}.", "moved", 0.8),
    ("{p} went to {tour} in {tyear}.", "toured", 1.0),
    ("In {tyear}, {p} toured {tour}.", "toured", 0.8),
    ("{p} took a trip to {tour} in {tyear}.", "toured", 0.8),
    ("{p} was born in {byear}.", "born", 1.0),
    ("{p} bought {a:bought}.", "bought", 1.0),
    ("{p} purchased {a:bought} at a flea sale.", "bought", 0.8),
    ("{p} bought {a:bought} from a neighbour.", "bought", 0.8),
    ("{p} lost {p.his} {lost} on the bus.", "lost", 1.0),
    ("{p} left {a:lost} on a train and never saw it again.", "lost", 0.8),
    ("{p} found {a:found} under a bench.", "found", 1.0),
    ("{p} discovered {a:found} in the attic.", "found", 0.8),
    ("While hiking, {p} came across {a:found}.", "found", 0.8),
    ("{p} carried {a:carried} up the hill.", "carried", 1.0),
    ("{p} was carrying {a:carried} when the rain started.", "carried", 0.8),
    ("{p} has {a:animal} named {petname}.", "pet", 1.0),
    ("{p} adopted {a:animal} called {petname}.", "pet", 0.8),
    ("{p}'s {animal} is called {petname}.", "pet", 0.8),
    ("{p} plays {sport} every Sunday.", "sport", 1.0),
    ("On Saturdays {p} plays {sport} with friends.", "sport", 0.8),
    ("{p} plays the {instrument} in a small band.", "instrument", 0.8),
    ("Every evening {p} practises the {instrument}.", "instrument", 0.8),
    ("For lunch, {p} had {food}.", "lunch", 1.0),
    ("{p} ordered {food} for lunch.", "lunch", 0.8),
    ("{p} owns {a:colour} {vehicle}.", "vehicle", 1.0),
    ("{p} rides {a:colour} {vehicle}.", "vehicle", 0.7),
    ("{p}'s {vehicle} is {colour}.", "vehicle", 0.7),
    ("{p} keeps {number} {herd}.", "keeps", 1.0),
    ("{p} looks after {number} {herd} on a small farm.", "keeps", 0.8),
    ("{p} planted {pnumber} {plants}.", "planted", 0.8),
    ("In the spring, {p} planted {pnumber} {plants}.", "planted", 0.8),
    ("{p} painted the {thing} {pcolour}.", "painted", 1.0),
    ("The {thing} was painted {pcolour} by {p}.", "painted", 0.8),
    ("{p} won the {contest} in {wyear}.", "won", 1.0),
    ("In {wyear}, the {contest} was won by {p}.", "won", 0.8),
    ("{p} took first prize in the {contest}.", "won", 0.8),
    # single person, two facts (pronoun inside the sentence)
    ("{p} moved to {dest} in {myear}, where {p.he} bought {a:bought}.", "moved bought", 1.2),
    ("Born in {byear}, {p} grew up in {origin}.", "born grew_up", 1.0),
    ("{p} grew up in {origin} and later settled in {dest}.", "grew_up moved", 1.0),
    ("{p}, who has {a:animal} named {petname}, plays {sport} every Sunday.", "pet sport", 1.0),
    ("After {p} lost {p.his} {lost}, {p.he} bought {a:bought}.", "lost bought", 1.0),
    ("{p} found {a:found} in {tour} when {p.he} went there in {tyear}.", "found toured", 1.0),
    ("{p} keeps {number} {herd} and rides {a:colour} {vehicle}.", "keeps vehicle", 0.8),
    # two people, contrast of one relation
    ("{p} grew up in {origin}, and {q} grew up in {origin2}.", "grew_up grew_up(p=q,origin=origin2)", 1.2),
    ("{p} moved to {dest} in {myear}; {q} moved to {dest2} in {myear2}.",
     "moved moved(p=q,dest=dest2,myear=myear2)", 1.2),
    ("{p} bought {a:bought}, and {q} bought {a:bought2}.", "bought bought(p=q,bought=bought2)", 1.2),
    ("{p} plays {sport}, while {q} prefers {sport2}.", "sport sport(p=q,sport=sport2)", 1.0),
    ("{p} has {a:animal} named {petname}, and {q} has {a:animal2} called {petname2}.",
     "pet pet(p=q,animal=animal2,petname=petname2)", 1.0),
    ("{p} was born in {byear} and {q} in {byear2}.", "born born(p=q,byear=byear2)", 1.0),
    ("{p} found {a:found}, but {q} lost {q.his} {lost}.", "found lost(p=q)", 1.0),
    ("{p} carried {a:carried} while {q} carried {a:carried2}.", "carried carried(p=q,carried=carried2)", 1.0),
    # two people, one relation with two roles
    ("{p} gave {q} {a:gift}.", "gave", 1.0),
    ("{p} gave {a:gift} to {q}.", "gave", 1.0),
    ("{q} received {a:gift} from {p}.", "gave", 1.0),
    ("{p} borrowed {q}'s {borrowed}.", "borrowed", 1.0),
    ("{q} lent {p} {q.his} {borrowed}.", "borrowed", 1.0),
    ("{p} borrowed {a:borrowed} from {q}.", "borrowed", 0.8),
    ("{p} phoned {q} on {weekday}.", "phoned", 1.0),
    ("On {weekday}, {p} called {q}.", "phoned", 1.0),
    ("{q} had a call from {p} on {weekday}.", "phoned", 0.8),
    ("{p} waited for {q} at {spot}.", "waited", 1.0),
    ("At {spot}, {p} waited for {q}.", "waited", 0.8),
    ("{q} kept {p} waiting at {spot}.", "waited", 0.8),
    ("{p} beat {q} at {game}.", "beat", 1.0),
    ("{q} was beaten by {p} at {game}.", "beat", 0.8),
    ("In a game of {game}, {p} defeated {q}.", "beat", 0.8),
    # negation: p did, q did not
    ("{q} did not go to the {event}, but {p} did.", "attended_not", 1.5),
    ("{p} went to the {event}; {q} did not.", "attended_not", 1.5),
    ("Unlike {q}, {p} went to the {event}.", "attended_not", 1.2),
    ("{q} missed the {event}, but {p} was there.", "attended_not", 1.2),
    ("It was {p}, not {q}, who went to the {event}.", "attended_not", 1.0),
    ("{p} was invited to the {party}, but {q} was not.", "invited_not", 1.2),
    ("{q} was not invited to the {party}; {p} was.", "invited_not", 1.0),
    ("{q} never learned to {skill}, but {p} did.", "skill_not", 1.5),
    ("{p} can {skill}, but {q} cannot.", "skill_not", 1.2),
    ("{p} learned to {skill} as a child; {q} never did.", "skill_not", 1.0),
    ("{p} has {a:nanimal}, but {q} does not.", "pet_not", 1.2),
    ("{q} does not have {a:nanimal}, unlike {p}.", "pet_not", 1.0),
    ("It was {p}, not {q}, who found the {nfound}.", "found_not", 1.0),
    ("{q} did not find the {nfound}; {p} did.", "found_not", 1.0),
    ("{q} did not buy the {nbought}, but {p} did.", "bought_not", 1.0),
)

_SLOT_RE = re.compile(r"\{([^{}]+)\}")
_PRONOUNS = {
    "female": {"he": "she", "He": "She", "his": "her", "His": "Her", "him": "her"},
    "male": {"he": "he", "He": "He", "his": "his", "His": "His", "him": "him"},
}


@dataclass(frozen=True)
class _Frame:
    template: str
    # ("lit", text, ""), ("person", slot, ""), ("pron", slot, form) or ("value", slot, article)
    parts: tuple[tuple[str, str, str], ...]
    persons: tuple[str, ...]  # person slots, in order of first appearance
    values: tuple[tuple[str, str], ...]  # (slot, filler type)
    facts: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (relation, ((role, slot), ...))
    weight: float


def _parse_facts(spec: str) -> list[tuple[str, dict[str, str]]]:
    facts = []
    for token in re.findall(r"\w+(?:\([^)]*\))?", spec):
        name, _, args = token.partition("(")
        relation = RELATIONS[name]
        mapping = {role: role for role in relation.roles}
        for arg in args.rstrip(")").split(","):
            if arg:
                role, slot = arg.split("=")
                mapping[role] = slot
        facts.append((name, mapping))
    return facts


def _compile_frame(template: str, spec: str, weight: float) -> _Frame:
    present = {m.group(1).split(".")[0].split(":")[-1] for m in _SLOT_RE.finditer(template)}
    # roles whose slot the template does not write stay unbound (e.g. "moved" without a year)
    facts = [(name, {r: s for r, s in mapping.items() if s in present}) for name, mapping in _parse_facts(spec)]
    slot_types: dict[str, str] = {}
    for name, mapping in facts:
        if "p" not in mapping:
            raise AssertionError(f"frame {template!r}: fact {name} has no person p")
        for role, slot in mapping.items():
            typ = RELATIONS[name].roles[role]
            if slot_types.setdefault(slot, typ) != typ:
                raise AssertionError(f"frame {template!r}: slot {slot} has two types")
    parts: list[tuple[str, str, str]] = []
    persons: list[str] = []
    values: list[tuple[str, str]] = []
    pos = 0
    for m in _SLOT_RE.finditer(template):
        if m.start() > pos:
            parts.append(("lit", template[pos:m.start()], ""))
        body = m.group(1)
        if "." in body:
            slot, form = body.split(".")
            parts.append(("pron", slot, form))
        elif ":" in body:
            art, slot = body.split(":")
            parts.append(("value", slot, art))
        else:
            slot = body
            kind = "person" if slot_types.get(slot) == "person" else "value"
            parts.append((kind, slot, ""))
        if slot not in slot_types:
            raise AssertionError(f"frame {template!r}: slot {slot} is not bound by a fact")
        if slot_types[slot] == "person":
            if slot not in persons:
                persons.append(slot)
        elif (slot, slot_types[slot]) not in values:
            values.append((slot, slot_types[slot]))
        pos = m.end()
    if pos < len(template):
        parts.append(("lit", template[pos:], ""))
    for slot, typ in slot_types.items():
        if typ == "person" and slot not in persons or typ != "person" and (slot, typ) not in values:
            raise AssertionError(f"frame {template!r}: slot {slot} is never written")
    return _Frame(template, tuple(parts), tuple(persons), tuple(values),
                  tuple((n, tuple(m.items())) for n, m in facts), weight)


FRAMES: tuple[_Frame, ...] = tuple(_compile_frame(t, s, w) for t, s, w in _FRAME_SPECS if w > 0)


@dataclass(frozen=True)
class _Question:
    answer: str
    kind: str
    parts: tuple[tuple[str, str], ...]  # ("lit", text) or (article or "", role)
    roles: frozenset[str]


def _compile_question(answer: str, kind: str, template: str) -> _Question:
    parts: list[tuple[str, str]] = []
    roles = set()
    pos = 0
    for m in _SLOT_RE.finditer(template):
        if m.start() > pos:
            parts.append(("lit", template[pos:m.start()]))
        art, _, role = m.group(1).rpartition(":")
        parts.append((art, role))
        roles.add(role)
        pos = m.end()
    if pos < len(template):
        parts.append(("lit", template[pos:]))
    return _Question(answer, kind, tuple(parts), frozenset(roles | {answer}))


_QUESTIONS: dict[str, tuple[_Question, ...]] = {
    name: tuple(_compile_question(*q) for q in rel.questions) for name, rel in RELATIONS.items()
}

#: Question kinds and how often each is asked (renormalised over the kinds a passage can answer).
KIND_WEIGHTS: dict[str, float] = {
    "who": 0.34, "who_neg": 0.14, "whom": 0.06, "whose": 0.05, "where": 0.09, "when": 0.09, "what": 0.13,
    "which": 0.06, "how_many": 0.04,
}
#: Number of people per passage and its probability.
PEOPLE_WEIGHTS: dict[int, float] = {2: 0.45, 3: 0.3, 4: 0.15, 5: 0.1}
#: Probability that a person's first mention gives the full name.
FULL_NAME_P = 0.35


def _article(text: str, capital: bool) -> str:
    """ "a "/"an " by sound: vowel letters take "an" except a "yoo"/"w" sound (unicycle, ukulele, one)."""
    low = text.lower()
    vowel = low[0] in "aeiou" and not low.startswith(("uni", "uku", "use", "eu", "one"))
    art = "an" if vowel or low.startswith(("hour", "honest", "heir")) else "a"
    return (art.capitalize() if capital else art) + " "


# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QAItem:
    """One extractive QA example; ``context[answer_start:answer_start + len(answer)] == answer``."""

    context: str
    question: str
    answer: str
    answer_start: int
    kind: str  # who, who_neg, whom, whose, where, when, what, which, how_many

    def as_squad(self, qid: str) -> dict:
        """The item as a SQuAD-format record (``answers`` with ``text``/``answer_start`` lists)."""
        return {"id": qid, "context": self.context, "question": self.question,
                "answers": {"text": [self.answer], "answer_start": [self.answer_start]}}

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Pools:
    female: tuple[str, ...]
    male: tuple[str, ...]
    surnames: tuple[str, ...]
    fillers: dict[str, tuple[str, ...]]


@dataclass
class _Person:
    first: str
    last: str
    gender: str
    full_first: bool
    mentioned: bool = False


def _check_pools(pools: _Pools) -> None:
    """Raise if any frame, question, filler or name could put a probe word into the corpus."""
    texts: list[str] = [f.template for f in FRAMES]
    texts += [t for rel in RELATIONS.values() for _, _, t in rel.questions]
    texts += [v for values in pools.fillers.values() for v in values]
    texts += list(pools.female) + list(pools.male) + list(pools.surnames)
    bad = _text_overlap(_SLOT_RE.sub(" ", t) for t in texts)
    if bad:
        raise CorpusError(f"The QA corpus vocabulary contains probe words {sorted(bad)}; remove them.")
    names = {n.lower() for n in pools.female + pools.male + pools.surnames}
    clash = {v for t in _NAMELIKE_TYPES for v in pools.fillers[t] if v.lower() in names}
    if clash:
        raise CorpusError(f"QA fillers {sorted(clash)} are also person names; remove them.")


@lru_cache(maxsize=None)
def _base_pools() -> _Pools:
    pool = namepool.neutral_names(500)
    census_first = {n.lower() for g in ("female", "male") for n, _ in namepool.read_census(g)}
    fillers = dict(FILLERS)
    # place and pet names must never read as person names
    for t in _NAMELIKE_TYPES:
        if t != "weekday":
            fillers[t] = tuple(v for v in fillers[t] if v.lower() not in census_first)
    namelike = {v.lower() for t in _NAMELIKE_TYPES for v in fillers[t]}
    surnames = tuple(s for s in namepool.surnames(600) if s.lower() not in namelike)
    pools = _Pools(pool["female"], pool["male"], surnames, fillers)
    _check_pools(pools)
    return pools


def _split(values: Sequence[str], rng: random.Random, fraction: float) -> tuple[tuple[str, ...], tuple[str, ...]]:
    order = list(values)
    rng.shuffle(order)
    k = max(2, round(len(order) * fraction))
    held = set(order[:k])
    return tuple(v for v in values if v not in held), tuple(v for v in values if v in held)


@lru_cache(maxsize=8)
def _split_pools(seed: int, fraction: float = 0.25) -> tuple[_Pools, _Pools]:
    base = _base_pools()
    rng = random.Random(f"stereoprobe-qa-split-{seed}")
    f_tr, f_ho = _split(base.female, rng, fraction)
    m_tr, m_ho = _split(base.male, rng, fraction)
    s_tr, s_ho = _split(base.surnames, rng, fraction)
    tr_f, ho_f = {}, {}
    for t in sorted(base.fillers):
        tr_f[t], ho_f[t] = _split(base.fillers[t], rng, fraction)
    return _Pools(f_tr, m_tr, s_tr, tr_f), _Pools(f_ho, m_ho, s_ho, ho_f)


#: A fact of a passage: (relation, role -> text as written, role -> answer start); ``"@" + role`` -> the
#: text a question uses for the role (a person's first name, or the value).
_Fact = tuple[str, dict[str, str], dict[str, int]]


@dataclass
class _Draft:
    """A passage under construction: its people and what its sentences have used so far."""

    people: list[_Person]
    pending: list[int]  # people not yet mentioned, in the order they are to be introduced
    used_values: dict[str, set[str]] = field(default_factory=dict)  # filler type -> values in the passage
    used_roles: set[tuple[str, str, int]] = field(default_factory=set)  # (predicate group, role, person)
    chunks: list[str] = field(default_factory=list)  # the sentences
    facts: list[_Fact] = field(default_factory=list)
    offset: int = 0  # character offset of the end of the last sentence

    def reuses_role(self, frame: _Frame, binding: dict[str, int]) -> bool:
        """Would the frame give a person a (predicate group, role) they already fill in the passage?"""
        return any((rel, role, binding[slot]) in self.used_roles
                   for rel, mapping in ((RELATIONS[n].group, m) for n, m in frame.facts)
                   for role, slot in mapping if slot in binding)

    def claim(self, frame: _Frame, binding: dict[str, int], values: dict[str, str]) -> None:
        """Record the fillers, the people's roles and the introductions of a sentence about to be added."""
        for slot, typ in frame.values:
            self.used_values.setdefault(typ, set()).add(values[slot])
        for name, mapping in frame.facts:
            group = RELATIONS[name].group
            for role, slot in mapping:
                if slot in binding:
                    self.used_roles.add((group, role, binding[slot]))
        for p in binding.values():
            if p in self.pending:
                self.pending.remove(p)


def _render(frame: _Frame, binding: dict[str, int], values: dict[str, str], people: list[_Person],
            start: int) -> tuple[str, dict[str, int], dict[str, str]]:
    """The frame's sentence, and per slot the passage offset and the text of its first mention in the sentence.

    The sentence starts at character ``start`` of the passage. A person's first mention in the passage is
    the full name when the person was drawn so (:data:`FULL_NAME_P`), otherwise and afterwards the first
    name; rendering marks the people as mentioned.
    """
    spans: dict[str, int] = {}
    texts: dict[str, str] = {}
    pieces: list[str] = []
    pos = start
    for kind, a, b in frame.parts:
        if kind == "lit":
            text = a
        elif kind == "person":
            person = people[binding[a]]
            if a not in spans:
                text = (person.first + " " + person.last) if (person.full_first and not person.mentioned) \
                    else person.first
                person.mentioned = True
                spans[a] = pos
                texts[a] = text
            else:
                text = person.first
        elif kind == "pron":
            text = _PRONOUNS[people[binding[a]].gender][b]
        else:
            v = values[a]
            if b:
                art = _article(v, b == "A")
                pieces.append(art)
                pos += len(art)
            text = v
            if a not in spans:
                spans[a] = pos
                texts[a] = v
        pieces.append(text)
        pos += len(text)
    return "".join(pieces), spans, texts


def _frame_facts(frame: _Frame, binding: dict[str, int], values: dict[str, str], people: list[_Person],
                 spans: dict[str, int], texts: dict[str, str]) -> list[_Fact]:
    """The facts a rendered frame states, with the answer text and start of every role (see :data:`_Fact`)."""
    facts: list[_Fact] = []
    for name, mapping in frame.facts:
        role_text: dict[str, str] = {}
        role_start: dict[str, int] = {}
        for role, slot in mapping:
            role_start[role] = spans[slot]
            role_text[role] = texts[slot]
            if slot in binding:
                role_text["@" + role] = people[binding[slot]].first
            else:
                role_text["@" + role] = values[slot]
        facts.append((name, role_text, role_start))
    return facts


class _Builder:
    """Builds passages and their questions from one pool set and one random stream."""

    def __init__(self, pools: _Pools, rng: random.Random) -> None:
        self.pools = pools
        self.rng = rng
        self.frame_cum: list[float] = []
        total = 0.0
        for frame in FRAMES:
            total += frame.weight
            self.frame_cum.append(total)
        self.people_k = list(PEOPLE_WEIGHTS)
        self.people_w = list(PEOPLE_WEIGHTS.values())

    def _pick_frame(self) -> _Frame:
        return self.rng.choices(FRAMES, cum_weights=self.frame_cum)[0]

    def passage(self) -> tuple[str, list[_Fact]]:
        """A context and its facts: (relation, role texts, role answer starts); ``@role`` = question text.

        The passage has 2–5 people (:data:`PEOPLE_WEIGHTS`) and ``k + 1``–``k + 3`` sentences, more if
        needed until every person is mentioned (at most 200 frame draws).
        """
        rng = self.rng
        k = rng.choices(self.people_k, self.people_w)[0]
        people = self._people(k)
        n_sentences = k + rng.randint(1, 3)
        pending = list(range(k))
        rng.shuffle(pending)
        draft = _Draft(people, pending)
        attempts = 0
        while (draft.pending or len(draft.chunks) < n_sentences) and attempts < 200:
            attempts += 1
            self._add_sentence(draft)
        return " ".join(draft.chunks), draft.facts

    def _people(self, k: int) -> list[_Person]:
        """``k`` people: distinct surnames, a fair-coin gender each, distinct first names of that gender."""
        rng = self.rng
        people: list[_Person] = []
        firsts: set[str] = set()
        lasts = rng.sample(self.pools.surnames, k)
        while len(people) < k:
            gender = "female" if rng.random() < 0.5 else "male"
            first = rng.choice(self.pools.female if gender == "female" else self.pools.male)
            if first in firsts:
                continue
            firsts.add(first)
            people.append(_Person(first, lasts[len(people)], gender, rng.random() < FULL_NAME_P))
        return people

    def _add_sentence(self, draft: _Draft) -> bool:
        """Draw a frame, bind it to people and fillers and append its sentence and facts to ``draft``.

        False (nothing added) when the frame needs more people than the passage has, would give a person
        a (predicate group, role) they already fill, or finds a filler list used up.
        """
        frame = self._pick_frame()
        if len(frame.persons) > len(draft.people):
            return False
        binding = self._bind(frame, draft)
        if draft.reuses_role(frame, binding):
            return False
        values = self._draw_values(frame, draft.used_values)
        if values is None:
            return False
        draft.claim(frame, binding, values)
        start = draft.offset + 1 if draft.chunks else draft.offset  # + the joining space
        sentence, spans, texts = _render(frame, binding, values, draft.people, start)
        draft.chunks.append(sentence)
        draft.offset = start + len(sentence)
        draft.facts.extend(_frame_facts(frame, binding, values, draft.people, spans, texts))
        return True

    def _bind(self, frame: _Frame, draft: _Draft) -> dict[str, int]:
        """Person slot -> person index: a random order, the first slot taking the next person to introduce."""
        order = list(range(len(draft.people)))
        self.rng.shuffle(order)
        if draft.pending:
            first = draft.pending[0]
            order.remove(first)
            order.insert(0, first)
        return dict(zip(frame.persons, order))

    def _draw_values(self, frame: _Frame, used_values: dict[str, set[str]]) -> dict[str, str] | None:
        """Value slot -> filler, each unused in the passage and within the frame; None if a list runs out."""
        rng = self.rng
        values: dict[str, str] = {}
        taken: dict[str, set[str]] = {}
        for slot, typ in frame.values:
            pool = self.pools.fillers[typ]
            used = used_values.get(typ, set()) | taken.get(typ, set())
            if len(used) >= len(pool):
                return None
            v = rng.choice(pool)
            while v in used:
                v = rng.choice(pool)
            values[slot] = v
            taken.setdefault(typ, set()).add(v)
        return values

    def items(self, want: int) -> list[QAItem]:
        rng = self.rng
        context, facts = self.passage()
        by_kind: dict[str, list[tuple[_Question, dict[str, str], dict[str, int]]]] = {}
        for name, texts, starts in facts:
            for q in _QUESTIONS[name]:
                if q.answer in starts and all("@" + r in texts for r in q.roles):
                    by_kind.setdefault(q.kind, []).append((q, texts, starts))
        out: list[QAItem] = []
        asked: set[tuple[str, int]] = set()
        while len(out) < want and by_kind:
            kinds = list(by_kind)
            kind = rng.choices(kinds, [KIND_WEIGHTS[k] for k in kinds])[0]
            q, texts, starts = rng.choice(by_kind[kind])
            key = (q.answer, starts[q.answer])
            by_kind[kind].remove((q, texts, starts))
            if not by_kind[kind]:
                del by_kind[kind]
            if key in asked:
                continue
            asked.add(key)
            parts = []
            for art, role in q.parts:
                if art == "lit":
                    parts.append(role)
                else:
                    v = texts["@" + role]
                    parts.append(_article(v, art == "A") + v if art else v)
            answer = texts[q.answer]
            out.append(QAItem(context, "".join(parts), answer, starts[q.answer], kind))
        return out


def _generate(n: int, pools: _Pools, rng: random.Random) -> list[QAItem]:
    if n < 0:
        raise CorpusError(f"n must be a non-negative number of items, got {n}.")
    builder = _Builder(pools, rng)
    items: list[QAItem] = []
    while len(items) < n:
        items.extend(builder.items(min(rng.choice((1, 2, 3)), n - len(items))))
    return items


def generate(n: int, seed: int = 0) -> list[QAItem]:
    """``n`` QA items (1–3 questions per passage) from the full name and filler pools; pure in ``seed``.

    >>> items = generate(3, seed=1)
    >>> all(it.context[it.answer_start:it.answer_start + len(it.answer)] == it.answer for it in items)
    True
    """
    return _generate(n, _base_pools(), random.Random(f"stereoprobe-qa-{seed}"))


def generate_splits(n_train: int, n_heldout: int, seed: int = 0) -> tuple[list[QAItem], list[QAItem]]:
    """Train and held-out items over disjoint names, surnames and fillers (75/25 partition per list)."""
    train_pools, heldout_pools = _split_pools(seed)
    train = _generate(n_train, train_pools, random.Random(f"stereoprobe-qa-train-{seed}"))
    heldout = _generate(n_heldout, heldout_pools, random.Random(f"stereoprobe-qa-heldout-{seed}"))
    return train, heldout


def split_pools(seed: int = 0) -> dict[str, dict[str, tuple[str, ...]]]:
    """The train/held-out name and filler partitions :func:`generate_splits` uses (for checks and reports)."""
    train, heldout = _split_pools(seed)
    return {
        split: {"female": p.female, "male": p.male, "surnames": p.surnames, **p.fillers}
        for split, p in (("train", train), ("heldout", heldout))
    }


def probe_overlap(items: Iterable[QAItem | str]) -> set[str]:
    """Forbidden probe words (lower case) found as whole words in the items' context, question or answer."""
    texts: list[str] = []
    for it in items:
        if isinstance(it, str):
            texts.append(it)
        else:
            texts.extend((it.context, it.question, it.answer))
    return _text_overlap(texts)


def gender_of(name: str) -> str | None:
    """``"female"``/``"male"`` for a name whose first token is in the neutral pool, else None."""
    return _gender_index().get(name.split()[0]) if name.strip() else None


@lru_cache(maxsize=None)
def _gender_index() -> dict[str, str]:
    pools = _base_pools()
    return {**{n: "female" for n in pools.female}, **{n: "male" for n in pools.male}}
