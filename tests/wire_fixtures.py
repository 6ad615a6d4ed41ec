"""Wire-service transcripts and an event brief, in the shapes of issue 23 item 4 (invented text).

Invented company (Halvorsen Marine Holdings), people, firms and figures, written for these tests.
``transcript(...)`` renders a full call: a title block, ``Corporate Participants`` and
``Conference Call Participants`` lists (`` * Name`` with the company and title on the next
line), ``Presentation`` / ``Questions and Answers`` headings, speaker lines ``Name, Company -
Title [n]`` and ``Operator [n]``, speech indented under them; optionally page furniture (a
running header, an "EDITED TRANSCRIPT" mark and a copyright footer on every page) and ``====``
separator lines. ``PRESENTATION`` is what presentation extraction must keep.
``event_brief()`` renders a summary document (``OVERVIEW``, ``FINANCIAL DATA``, ``PRESENTATION
SUMMARY``, ``QUESTIONS AND ANSWERS``, participant lists at the end); ``BRIEF_KEPT`` is what must
be kept.
"""

from __future__ import annotations

COMPANY = "Halvorsen Marine Holdings Inc"
EXECUTIVES = {  # name as listed -> title
    "Ingrid M. Solberg": "President, CEO & Director",
    "Tobias Renwick": "Executive VP & CFO",
    "Carla Mendes": "VP of Investor Relations",
}
#: How speaker lines write the executives (the list adds a middle initial, the lines do not).
SPOKEN = {"Ingrid M. Solberg": "Ingrid Solberg", "Tobias Renwick": "Tobias Renwick",
          "Carla Mendes": "Carla Mendes"}
ANALYSTS = {
    "Owen Faraday": "Kestrel Capital Markets, Research Division",
    "Priya Anand": "Northgate Securities, Research Division",
}

PRESENTATION_TURNS = [
    ("Carla Mendes", [
        "Thank you, operator, and good morning. With me today are Ingrid Solberg, our Chief "
        "Executive Officer, and Tobias Renwick, our Chief Financial Officer. Today's remarks "
        "include forward-looking statements that are subject to risks described in our filings.",
    ]),
    ("Ingrid M. Solberg", [
        "Thanks, Carla. Our second quarter was a record for the fleet services segment: revenue "
        "rose 14% to $2.31 billion as charter rates held firm on the North Atlantic routes and "
        "our three new ice-class vessels entered service ahead of schedule.",
        "Port logistics grew 9%, helped by the terminal we opened in Bergen last spring, and the "
        "order book for offshore support reached $5.6 billion, the highest in our history. We "
        "also signed a ten-year agreement to operate the Harstad repair yard.",
        "Safety remains our first priority: the lost-time injury rate fell to 0.21, and every "
        "crew completed the new cold-water training. With that, I'll hand over to Tobias.",
    ]),
    ("Tobias Renwick", [
        "Thank you, Ingrid. Gross margin was 31.4%, up 80 basis points, on higher utilisation "
        "and lower fuel costs per nautical mile. Operating expenses were $402 million.",
        "Free cash flow was $188 million, and we repaid $150 million of the 2026 notes. Net "
        "leverage ended the quarter at 2.1 times, inside our target range.",
        "For the full year we now expect revenue of $9.1 billion to $9.3 billion and capital "
        "expenditure of about $640 million, mostly for the two vessels due next summer.",
    ]),
]
QA_TURNS = [
    ("Operator", ["(Operator Instructions) Our first question comes from Owen Faraday with "
                  "Kestrel Capital Markets."]),
    ("Owen Faraday", ["Good morning. Ingrid, how durable are the charter rates into next year?"]),
    ("Ingrid M. Solberg", ["Thanks, Owen. Most of next year's capacity is already contracted."]),
    ("Operator", ["Our next question comes from Priya Anand with Northgate Securities."]),
    ("Priya Anand", ["Tobias, what drove the lower fuel cost per mile?"]),
    ("Tobias Renwick", ["Mostly the new hulls, Priya, and better routing software."]),
    ("Operator", ["This concludes today's conference. You may now disconnect."]),
]
OPERATOR_INTRO = (
    "Good day, and welcome to the Halvorsen Marine Holdings Second Quarter 2022 Earnings "
    "Conference Call. At this time all participants are in a listen-only mode. I would now like "
    "to turn the conference over to Carla Mendes. Please go ahead."
)
PRESENTATION = "\n\n".join("\n".join(paragraphs) for _, paragraphs in PRESENTATION_TURNS)

HEADER = "AUG 04, 2022 / 1:00PM GMT, HMH - Q2 2022 Halvorsen Marine Holdings Inc Earnings Call"
FOOTER = [
    "EDITED TRANSCRIPT",
    "©2022 Refinitiv. All rights reserved. Republication or redistribution of content is "
    "prohibited.",
]


def _speaker(name: str, number: int, company: str) -> str:
    if name == "Operator":
        return f"Operator    [{number}]"
    if name in EXECUTIVES:
        return f"{SPOKEN[name]}, {company} - {EXECUTIVES[name]}    [{number}]"
    return f"{name}, {ANALYSTS[name]} - Analyst    [{number}]"


def _participants(upper: bool = False) -> list[str]:
    corporate, outside = "Corporate Participants", "Conference Call Participants"
    if upper:
        corporate, outside = corporate.upper(), outside.upper()
    lines = [corporate, ""]
    for name, title in EXECUTIVES.items():
        lines += [f" * {name}", f"   {COMPANY}. - {title}"]
    lines += ["", outside, ""]
    for name, firm in ANALYSTS.items():
        lines += [f" * {name}", f"   {firm} - Analyst"]
    return lines + [""]


def transcript(
    *, furniture: bool = False, separators: bool = False, upper_headings: bool = False,
    company_in_lines: str = "Halvorsen Marine Holdings Inc."
) -> str:
    """The full call in the wire-service layout (module docstring)."""
    rule = ["=" * 78] if separators else []
    presentation, qa = ("PRESENTATION", "QUESTIONS AND ANSWERS") if upper_headings else (
        "Presentation", "Questions and Answers")
    body: list[str] = [*rule, presentation, *rule]
    number = 1
    for name, paragraphs in [("Operator", [OPERATOR_INTRO]), *PRESENTATION_TURNS]:
        body += ["-" * 78] if separators else []
        body += [_speaker(name, number, company_in_lines), ""]
        body += [f"          {p}" for p in paragraphs] + [""]
        number += 1
    body += [*rule, qa, *rule]
    for name, paragraphs in QA_TURNS:
        body += [_speaker(name, number, company_in_lines)]
        body += [f"          {p}" for p in paragraphs] + [""]
        number += 1
    head = [f"{COMPANY} Earnings Call", "EVENT DATE/TIME: AUGUST 04, 2022 / 1:00PM GMT", ""]
    lines = head + _participants(upper_headings) + body
    if not furniture:
        return "\n".join(lines) + "\n"
    out: list[str] = []
    for start in range(0, len(lines), 14):  # a page every 14 lines
        out += [HEADER, ""] + lines[start : start + 14] + ["", *FOOTER, ""]
    return "\n".join(out) + "\n"


# --- the event brief ------------------------------------------------------------------------------
BRIEF_SECTIONS = {
    "OVERVIEW:": [
        "Company reported 2Q22 revenue of $2.31b, up 14%, and raised its FY22 revenue guidance "
        "to $9.1-9.3b on firm North Atlantic charter rates and three new ice-class vessels.",
    ],
    "FINANCIAL DATA": [
        "1.  2Q22 revenue was $2.31b.",
        "2.  2Q22 gross margin was 31.4%.",
        "3.  2Q22 FCF was $188m.",
        "4.  FY22 revenue guidance is $9.1-9.3b.",
        "5.  FY22 capex guidance is about $640m.",
    ],
    "PRESENTATION SUMMARY": [
        "1.  Fleet Services",
        "    1.  Record quarter: charter rates held firm and the new ice-class vessels entered "
        "service ahead of schedule.",
        "    2.  Offshore support order book reached $5.6b, the highest in the company's "
        "history.",
        "2.  Port Logistics",
        "    1.  Grew 9%, helped by the Bergen terminal opened last spring.",
        "    2.  Signed a ten-year agreement to operate the Harstad repair yard.",
        "3.  Financial Review",
        "    1.  Net leverage ended the quarter at 2.1 times, inside the target range, after "
        "repaying $150m of the 2026 notes.",
    ],
}
BRIEF_QA = [
    "1.  Q: How durable are charter rates into next year?",
    "    A: Most of next year's capacity is already contracted.",
    "2.  Q: What drove the lower fuel cost per mile?",
    "    A: The new hulls and better routing software.",
]
BRIEF_KEPT = "\n\n".join("\n".join(x.strip() for x in lines) for lines in BRIEF_SECTIONS.values())


def event_brief() -> str:
    """The call as an event brief: summary sections, then the Q&A summary, then the lists."""
    lines = [
        "THOMSON REUTERS STREETEVENTS EVENT BRIEF",
        f"Q2 2022 {COMPANY} Earnings Call",
        "EVENT DATE/TIME: AUGUST 04, 2022 / 1:00PM GMT",
        "",
    ]
    for heading, section in BRIEF_SECTIONS.items():
        lines += [heading, *section, ""]
    lines += ["QUESTIONS AND ANSWERS", *BRIEF_QA, ""]
    lines += _participants(upper=True)
    return "\n".join(lines) + "\n"
