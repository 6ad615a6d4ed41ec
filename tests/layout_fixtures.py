"""Synthetic earnings calls rendered in each transcript layout neswap reads (issue 10).

Invented company (Brightwater Instruments), people and figures; written for these tests, not
copied from any transcript. ``render(layout)`` gives the full text; ``PRESENTATION`` is what
presentation extraction must keep: the management's speech from the first management remark up
to the Q&A, turns joined by a blank line.
"""

from __future__ import annotations

COMPANY = "Brightwater Instruments"
EXECUTIVES = {  # name -> title
    "Priyanka Desai": "Vice President, Investor Relations",
    "Margaret Ellison": "President and Chief Executive Officer",
    "Thomas Raskin": "Executive Vice President and Chief Financial Officer",
}
ANALYSTS = {"Gordon Vale": "Fenwick Securities", "Hannah Cole": "Marlowe & Company"}

OPERATOR_INTRO = (
    "Good day, and welcome to the Brightwater Instruments Third Quarter 2021 Earnings Conference "
    "Call. All participants are in a listen-only mode. After the speakers' presentation there will "
    "be a question-and-answer session. I would now like to hand the conference over to your "
    "speaker today, Priyanka Desai. Please go ahead."
)
PRESENTATION_TURNS = [
    (
        "Priyanka Desai",
        [
            "Thank you, operator, and good morning, everyone. With me on today's call are Meg "
            "Ellison, our Chief Executive Officer, and Tom Raskin, our Chief Financial Officer.",
            "Before we begin, please note that today's remarks contain forward-looking statements "
            "that involve risks described in our filings. I'll now turn the call over to Meg.",
        ],
    ),
    (
        "Margaret Ellison",
        [
            "Thanks, Priyanka, and good morning. Our third quarter was the strongest in our "
            "history: revenue grew 18% to $412 million and every region contributed.",
            "Demand for our Tidewater flow sensors remained robust in Europe and in North "
            "America, and our new calibration service signed 240 industrial customers. Supply "
            "chains stayed tight, yet our plants in Ohio and Portugal shipped on time, and our "
            "backlog reached a record $690 million at the end of the quarter.",
            "Our software business had another excellent quarter. Subscriptions to our "
            "Harborview monitoring platform grew 31%, net retention stayed above 115%, and we "
            "launched predictive maintenance modules for water utilities and food processors.",
            "We also completed the acquisition of Lumen Optics, which adds spectrometry to our "
            "portfolio and brings a talented engineering team in Grenoble. With that, I'll hand "
            "it over to Tom.",
        ],
    ),
    (
        "Thomas Raskin",
        [
            "Thank you, Meg. Gross margin was 46.3%, up 120 basis points from last year, driven by "
            "pricing and a better product mix. Operating expenses were $96 million.",
            "Free cash flow was $71 million and we returned $40 million to shareholders through "
            "buybacks. Inventory rose to $318 million as we built safety stock of critical "
            "components, and we expect it to normalise during the first half of next year.",
            "For the fourth quarter we expect revenue between $420 million and $435 "
            "million and adjusted earnings per share of $1.12 to $1.18.",
        ],
    ),
]
QA_TURNS = [
    (
        "Operator",
        [
            "Thank you. We will now begin the question-and-answer session. Our first question "
            "comes from Gordon Vale with Fenwick Securities. Please go ahead."
        ],
    ),
    (
        "Gordon Vale",
        ["Hi, Meg. Congratulations on the quarter. How should we think about pricing next year?"],
    ),
    (
        "Margaret Ellison",
        ["Thanks, Gordon. We expect pricing to hold, and we see steady demand in Europe."],
    ),
    ("Operator", ["Our next question comes from Hannah Cole with Marlowe & Company."]),
    ("Hannah Cole", ["Thanks. Tom, can you talk about the cash conversion in the quarter?"]),
    ("Thomas Raskin", ["Sure, Hannah. Cash conversion was above 100% of net income."]),
    ("Operator", ["That concludes today's conference call. Thank you for participating."]),
]
PRESENTATION = "\n\n".join("\n".join(paragraphs) for _, paragraphs in PRESENTATION_TURNS)
LAYOUTS = ("motleyfool", "streetevents", "capiq", "seekingalpha", "dash", "colon")


def _title(name: str) -> str:
    return EXECUTIVES.get(name) or ANALYSTS.get(name, "")


def _turns(section: list[tuple[str, list[str]]], speaker_line) -> list[str]:
    out = []
    for name, paragraphs in section:
        out.append(speaker_line(name))
        out.append("\n".join(paragraphs))
    return out


def _motleyfool() -> str:
    def line(name: str) -> str:
        if name == "Operator":
            return "Operator"
        if name in ANALYSTS:
            return f"{name} -- {ANALYSTS[name]} -- Analyst"
        return f"{name} -- {EXECUTIVES[name]}"

    people = [line(n) for n in (*EXECUTIVES, *ANALYSTS)]
    blocks = [
        "Image source: The Motley Fool.",
        "Brightwater Instruments (BWI) Q3 2021 Earnings Call\nOct 28, 2021, 8:30 a.m. ET",
        "Contents:\n\nPrepared Remarks\nQuestions and Answers\nCall Participants",
        "Prepared Remarks:",
        *_turns([("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS], line),
        "Questions and Answers:",
        *_turns(QA_TURNS, line),
        "Duration: 34 minutes",
        "Call participants:",
        "\n".join(people),
    ]
    return "\n\n".join(blocks) + "\n"


def _streetevents() -> str:
    bar, rule = "=" * 80, "-" * 80
    index = {"Operator": 0}
    for number, name in enumerate((*EXECUTIVES, *ANALYSTS), start=1):
        index[name] = number

    def line(name: str) -> str:
        if name == "Operator":
            who = "Operator"
        elif name in EXECUTIVES:
            who = f"{name},  {COMPANY} - {EXECUTIVES[name]}"
        else:
            who = f"{name},  {ANALYSTS[name]} - Analyst"
        return f"{rule}\n{who}   [{index[name] + 1}]\n{rule}"

    corporate = "\n".join(f" * {n}\n   {COMPANY} - {t}" for n, t in EXECUTIVES.items())
    outside = "\n".join(f" * {n}\n   {f} - Analyst" for n, f in ANALYSTS.items())
    turns = [
        *_turns([("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS], line),
    ]
    qa = _turns(QA_TURNS, line)
    return "\n".join(
        [
            "THOMSON REUTERS STREETEVENTS EDITED TRANSCRIPT",
            "BWI - Q3 2021 Brightwater Instruments Inc Earnings Call",
            "",
            "EVENT DATE/TIME: OCTOBER 28, 2021 / 12:30PM GMT",
            "",
            bar,
            "Corporate Participants",
            bar,
            "",
            corporate,
            "",
            bar,
            "Conference Call Participiants",
            bar,
            "",
            outside,
            "",
            bar,
            "Presentation",
            *[f"{block}\n" for block in turns],
            bar,
            "Questions and Answers",
            *[f"{block}\n" for block in qa],
        ]
    )


def _capiq() -> str:
    def line(name: str) -> str:
        if name == "Operator":
            return "Operator"
        return f"{name}\n{EXECUTIVES.get(name) or ANALYSTS[name] + ', Research Division'}"

    executives = "\n\n".join(f"{n}\n{t}" for n, t in EXECUTIVES.items())
    analysts = "\n\n".join(f"{n}\n{f}, Research Division" for n, f in ANALYSTS.items())
    blocks = [
        "Brightwater Instruments, Inc. NasdaqGS:BWI\nFQ3 2021 Earnings Call Transcripts\n"
        "Thursday, October 28, 2021 12:30 PM GMT",
        "Call Participants",
        "EXECUTIVES",
        executives,
        "ANALYSTS",
        analysts,
        "Presentation",
        *_turns([("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS], line),
        "Question and Answer",
        *_turns(QA_TURNS, line),
    ]
    return "\n\n".join(blocks) + "\n"


def _seekingalpha() -> str:
    company = "\n".join(f"{n} - {t}" for n, t in EXECUTIVES.items())
    outside = "\n".join(f"{n} - {f}" for n, f in ANALYSTS.items())
    blocks = [
        "Brightwater Instruments, Inc. (BWI) Q3 2021 Earnings Call Transcript",
        "Oct. 28, 2021 8:30 AM ET",
        "Company Participants",
        company,
        "Conference Call Participants",
        outside,
        *_turns([("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS], str),
        "Question-and-Answer Session",
        *_turns(QA_TURNS, str),
    ]
    return "\n\n".join(blocks) + "\n"


def _dash() -> str:
    def line(name: str) -> str:
        if name in ANALYSTS:
            return f"{name} -- {ANALYSTS[name]} -- Analyst"
        return "Operator" if name == "Operator" else f"{name} -- {_title(name)}"

    return "\n\n".join(
        _turns([("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS, *QA_TURNS], line)
    )


def _colon() -> str:
    out = []
    for name, paragraphs in [("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS, *QA_TURNS]:
        out.append(f"{name}: " + "\n".join(paragraphs))
    return "\n\n".join(out) + "\n"


def render(layout: str) -> str:
    """The synthetic call in ``layout`` (one of ``LAYOUTS``)."""
    return {
        "motleyfool": _motleyfool,
        "streetevents": _streetevents,
        "capiq": _capiq,
        "seekingalpha": _seekingalpha,
        "dash": _dash,
        "colon": _colon,
    }[layout]()


def unknown_layout() -> str:
    """The same call with speaker tags in a layout neswap does not know (``>> NAME (Title)``)."""
    out = ["BRIGHTWATER INSTRUMENTS Q3 2021 CALL", ""]
    for name, paragraphs in [("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS, *QA_TURNS]:
        out.append(f">> {name.upper()} ({_title(name) or 'Moderator'})")
        out.extend(paragraphs)
        out.append("")
    return "\n".join(out)
