"""Seeded synthetic memory histories: facts hidden among distractors that share sites,
equipment and people, with paraphrased questions and negative controls."""

from __future__ import annotations

import random
from dataclasses import dataclass

__all__ = ["Dataset", "Question", "generate"]

CITIES = [
    "Berlin", "Osaka", "Austin", "Lyon", "Pune", "Oslo", "Lima", "Cork", "Seoul", "Porto",
    "Denver", "Tunis", "Quito", "Malmo", "Perth", "Accra", "Hanoi", "Bergen", "Krakow", "Recife",
]  # fmt: skip
FACILITIES = ["plant", "lab", "depot", "office"]
SITES = [f"{city} {facility}" for city in CITIES for facility in FACILITIES]
EQUIPMENT = [
    "forklift", "3D printer", "centrifuge", "kiln", "lathe", "air compressor", "label printer",
    "spectrometer", "conveyor belt", "backup generator", "freezer", "laser cutter",
    "pallet wrapper", "fume hood", "band saw", "chiller", "autoclave", "drill press",
    "sorting robot", "paint booth", "welding rig", "scale", "boiler", "dehumidifier",
    "barcode scanner", "hydraulic press", "oven", "mixer", "crane", "water pump",
]  # fmt: skip
PEOPLE = [
    "Mira",
    "Tomas",
    "Aiko",
    "Jonas",
    "Priya",
    "Lucas",
    "Fatima",
    "Kenji",
    "Olga",
    "Rafael",
    "Zanele",
    "Henrik",
    "Ines",
    "Dmitri",
    "Chloe",
    "Omar",
]
VENDORS = [
    "Kessler Parts",
    "Northwind Supply",
    "Aurora Components",
    "Baltic Tools",
    "Sunrise Spares",
    "Vega Industrial",
    "Orion Maintenance",
    "Delta Fixings",
]
CHANNELS = ["e-mail", "Slack", "a printed sheet", "SMS", "the team wiki", "a phone call"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# (fact template, question paraphrases); the question never repeats the fact's wording.
TEMPLATES: list[tuple[str, list[str]]] = [
    (
        "The {equip} at the {site} is serviced every {n} weeks by {person}.",
        [
            "How often does the {equip} in the {site} get maintenance?",
            "What is the maintenance interval of the {site}'s {equip}?",
        ],
    ),
    (
        "The {site} orders spare parts for its {equip} from {vendor}.",
        [
            "Which supplier provides replacement components for the {equip} in the {site}?",
            "Who do we buy {equip} parts from for the {site}?",
        ],
    ),
    (
        "{person} calibrated the {equip} at the {site} on {day} {month}.",
        [
            "When was the {site}'s {equip} last calibrated?",
            "Date of the most recent calibration of the {equip} at the {site}?",
        ],
    ),
    (
        "The {site} {equip} runs firmware version {ver}.",
        [
            "What software release is installed on the {equip} at the {site}?",
            "Which firmware does the {site}'s {equip} use?",
        ],
    ),
    (
        "{person} wants the {site} shift reports sent by {channel}.",
        [
            "How should shift reports from the {site} be delivered to {person}?",
            "What channel does {person} like for {site} shift summaries?",
        ],
    ),
    (
        "The {equip} at the {site} must be locked out by {person} before any repair.",
        [
            "Who has to do the lockout on the {site} {equip} ahead of repairs?",
            "Before fixing the {equip} in the {site}, who isolates it?",
        ],
    ),
]

NEGATIVES_ENTITY = [
    "How many parking spaces does the {site} have?",
    "What is {person}'s favourite lunch spot?",
    "Who won the {site} chess tournament last year?",
    "What colour is the {equip} at the {site} painted?",
    "What is the annual electricity bill of the {site}?",
    "Which languages does {person} speak?",
]
NEGATIVES_UNRELATED = [
    "What is the capital of Peru?",
    "Recommend a quick pasta recipe for dinner.",
    "Who wrote the novel Middlemarch?",
    "How do I convert Celsius to Fahrenheit?",
    "What's a good name for a golden retriever puppy?",
    "Explain how tides work.",
    "Which planets have rings?",
    "Suggest a weekend hiking trip near the sea.",
]


# With asset tags: each machine carries an id like "PX-7731"; these questions name the machine
# by its tag alone (and share little else with the fact's wording).
TAGGED_QUESTIONS: list[list[str]] = [
    [
        "How often does {tag} get its maintenance?",
        "Service cadence for asset {tag}?",
    ],
    [
        "Who supplies replacement parts for {tag}?",
        "Which vendor do we order {tag} spares from?",
    ],
    [
        "When was {tag} last calibrated, and by whom?",
        "Latest calibration date on record for {tag}?",
    ],
    [
        "What firmware is {tag} on?",
        "Which software build does unit {tag} run?",
    ],
    [
        "How does {person} want the {site} shift summaries delivered?",
        "{person} gets {site} shift reports through which channel?",
    ],
    [
        "Who signs off the lockout of {tag} before repairs?",
        "Who must isolate {tag} ahead of any fix?",
    ],
]
NEGATIVES_TAGGED = [
    "What colour is {tag} painted?",
    "How much did {tag} cost when it was bought?",
    "Who is the insurance broker for {tag}?",
    "What is the serial number printed on the base of {tag}?",
]


@dataclass(frozen=True)
class Question:
    """A question and the index of its one right fact (None for negative controls)."""

    text: str
    answer: int | None


@dataclass(frozen=True)
class Dataset:
    """Facts (content strings) and questions about them."""

    facts: list[str]
    questions: list[Question]
    negatives: list[Question]


def asset_tag(site: str, equip: str, seed: int) -> str:
    """A stable id like "PX-7731" for one machine at one site."""
    rnd = random.Random(f"{seed}:{site}:{equip}")
    letters = "ABCDEFGHJKLMNPRSTUVWXZ"
    return f"{rnd.choice(letters)}{rnd.choice(letters)}-{rnd.randint(1000, 9999)}"


def generate(
    n_facts: int, n_questions: int, n_negatives: int, seed: int = 7, *, tags: bool = False
) -> Dataset:
    """A reproducible history of ``n_facts`` facts (each combination unique).

    ``tags`` gives every machine an asset id in its facts, and half of the questions (and of
    the entity negatives) name the machine by that id alone: id-heavy data.
    """
    rnd = random.Random(seed)
    combos = [(t, s, e) for t in range(len(TEMPLATES)) for s in SITES for e in EQUIPMENT]
    rnd.shuffle(combos)
    facts: list[str] = []
    keys: list[dict[str, str]] = []
    seen_person_site: set[tuple[str, str, int]] = set()
    i = 0
    while len(facts) < n_facts:
        t, site, equip = combos[i % len(combos)]
        i += 1
        person = rnd.choice(PEOPLE)
        if t == 4:  # person-site template: keep (person, site) unique
            if (person, site, t) in seen_person_site:
                continue
            seen_person_site.add((person, site, t))
        slots = {
            "site": site,
            "equip": equip,
            "person": person,
            "n": str(rnd.randint(2, 26)),
            "vendor": rnd.choice(VENDORS),
            "day": str(rnd.randint(1, 28)),
            "month": rnd.choice(MONTHS),
            "channel": rnd.choice(CHANNELS),
            "ver": f"{rnd.randint(1, 9)}.{rnd.randint(0, 20)}.{rnd.randint(0, 9)}",
        }
        if tags:
            slots["tag"] = asset_tag(site, equip, seed)
            slots["equip"] = f"{equip} {slots['tag']}"
        text = TEMPLATES[t][0].format(**slots)
        if i > len(combos):  # more facts than combinations: vary with a unit tag
            text = text.rstrip(".") + f" (unit {i // len(combos) + 1})."
        facts.append(text)
        keys.append({**slots, "t": str(t)})
    targets = rnd.sample(range(len(facts)), min(n_questions, len(facts)))
    questions = []
    for idx in targets:
        k = keys[idx]
        template = rnd.choice(TEMPLATES[int(k["t"])][1])
        if tags and rnd.random() < 0.5:
            template = rnd.choice(TAGGED_QUESTIONS[int(k["t"])])
        elif tags:
            k = {**k, "equip": k["equip"].rsplit(" ", 1)[0]}
        questions.append(Question(template.format(**k), idx))
    negatives = []
    for j in range(n_negatives):
        if j % 2 == 0:
            negatives.append(
                Question(NEGATIVES_UNRELATED[(j // 2) % len(NEGATIVES_UNRELATED)], None)
            )
        else:
            if tags and j % 4 == 1:
                k = keys[rnd.randrange(len(keys))]
                template = NEGATIVES_TAGGED[(j // 4) % len(NEGATIVES_TAGGED)]
                negatives.append(Question(template.format(tag=k["tag"]), None))
                continue
            template = NEGATIVES_ENTITY[(j // 2) % len(NEGATIVES_ENTITY)]
            negatives.append(
                Question(
                    template.format(
                        site=rnd.choice(SITES),
                        person=rnd.choice(PEOPLE),
                        equip=rnd.choice(EQUIPMENT),
                    ),
                    None,
                )
            )
    return Dataset(facts, questions, negatives)
