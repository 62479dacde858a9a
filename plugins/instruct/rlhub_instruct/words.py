"""Word lists that requests, constraint parameters and gold completions are generated from.

The lists are split by role and kept disjoint on purpose (``tests/test_words.py`` checks it):

* request words (genres, audiences, focuses, tones) appear in the prompt, so forbidden-word
  constraints draw from them — an echoed prompt then contains a forbidden word — while gold
  completions never use them;
* keywords (for required-keyword and keyword-frequency constraints) never occur in gold filler
  text, so the gold can hit an exact count;
* filler sentences, phrases and titles are comma-free, so gold completions satisfy "no commas";
* function words (articles, prepositions, pronouns, auxiliaries) are how the content gate tells
  English prose from filler: at least one word in five of a gold is one, and a template of
  numbered tokens or keywords has almost none.
"""

from __future__ import annotations

# (word the response must mention, phrase used in the request)
TOPICS: tuple[tuple[str, str], ...] = (
    ("lighthouse", "lighthouses"), ("bicycle", "bicycles"), ("volcano", "volcanoes"),
    ("bakery", "neighborhood bakeries"), ("telescope", "telescopes"),
    ("garden", "community gardens"), ("train", "night trains"), ("robot", "household robots"),
    ("river", "rivers"), ("museum", "small museums"), ("kite", "kites"),
    ("honeybee", "honeybees"), ("chessboard", "chess clubs"), ("kettle", "kettles"),
    ("rainforest", "rainforests"), ("submarine", "submarines"), ("castle", "old castles"),
    ("festival", "street festivals"), ("piano", "pianos"), ("desert", "deserts"),
)

# (genre with its article, the head word a forbidden-word constraint may ban)
GENRES: tuple[tuple[str, str], ...] = (
    ("a short blog post", "blog"), ("a letter", "letter"), ("an essay", "essay"),
    ("a story", "story"), ("a speech", "speech"), ("a review", "review"),
    ("a guide", "guide"), ("an announcement", "announcement"), ("a diary entry", "diary"),
    ("a newsletter", "newsletter"), ("a report", "report"), ("a product pitch", "pitch"),
)

# (audience phrase, its head noun)
AUDIENCES: tuple[tuple[str, str], ...] = (
    ("retired teachers", "teachers"), ("new parents", "parents"),
    ("high school students", "students"), ("busy nurses", "nurses"),
    ("amateur astronomers", "astronomers"), ("small business owners", "owners"),
    ("city commuters", "commuters"), ("young musicians", "musicians"),
    ("volunteer firefighters", "firefighters"), ("curious tourists", "tourists"),
)

# (focus phrase, its head noun)
FOCUSES: tuple[tuple[str, str], ...] = (
    ("the history", "history"), ("practical tips", "tips"), ("common myths", "myths"),
    ("future changes", "changes"), ("everyday costs", "costs"),
    ("safety concerns", "safety"), ("hidden benefits", "benefits"),
)

# (tone with its article, the tone word)
TONES: tuple[tuple[str, str], ...] = (
    ("a hopeful", "hopeful"), ("a playful", "playful"), ("a serious", "serious"),
    ("a calm", "calm"), ("a formal", "formal"), ("an upbeat", "upbeat"),
    ("a nostalgic", "nostalgic"),
)

KEYWORDS: tuple[str, ...] = (
    "lantern", "compass", "orchard", "velvet", "harbor", "meadow", "quartz", "saffron",
    "glacier", "ribbon", "marble", "thunder", "cedar", "falcon", "violin", "canyon",
    "pepper", "anchor", "meteor", "willow",
)

# Openers and predicates of sentences about the topic ("{opener} {topic} {predicate}.").
OPENERS: tuple[str, ...] = ("The", "Every", "A good", "One old", "Each", "This")
PREDICATES: tuple[str, ...] = (
    "rewards patient attention", "shapes daily routines", "deserves a closer look",
    "brings people together", "holds small surprises", "invites fresh questions",
    "shifts with the seasons", "needs steady care", "sparks lively debate",
    "leaves a lasting mark", "feels different at dawn", "teaches quiet lessons",
)

# Comma-free sentences that never mention a topic, keyword or request word.
FILLERS: tuple[str, ...] = (
    "Small habits add up over many years.", "Good ideas often start as simple questions.",
    "Patience turns rough plans into real results.", "Most people learn best by doing.",
    "A clear goal makes every step easier.", "Little details can matter a great deal.",
    "Some lessons only come with time.", "Sharing what we know helps everyone grow.",
    "Careful planning saves effort later.", "Fresh eyes often notice what others miss.",
    "Every season brings its own rhythm.", "Quiet moments give room to think.",
    "Simple tools can do surprising work.", "Kind words travel farther than we expect.",
    "Progress is rarely a straight line.", "Curiosity keeps the mind young.",
)

# Templates for sentences that carry keywords, placeholders and highlights.
KEYWORD_SENTENCES: tuple[str, ...] = (
    "I keep thinking about the {w}.", "The {w} fits this picture well.",
    "Nobody should overlook the {w}.", "Picture the {w} for a moment.",
    "The {w} adds a touch of wonder.", "It all comes back to the {w}.",
)
PLACEHOLDERS: tuple[str, ...] = (
    "address", "name", "date", "phone number", "city", "company", "price", "email",
)
HIGHLIGHTS: tuple[str, ...] = (
    "worth remembering", "a small detail", "the main point", "easy to miss",
    "truly important", "a fresh idea", "the best part", "a key step",
)

START_PHRASES: tuple[str, ...] = (
    "Here is my answer", "Let me begin", "Dear reader", "To start with", "Good question",
    "Picture this", "Right away",
)
END_PHRASES: tuple[str, ...] = (
    "Is there anything else I can help with?", "Thank you for your time.",
    "That is all for now.", "Until next time.", "Let me know what you think.",
    "Any other questions?",
)
TITLE_TEMPLATES: tuple[str, ...] = (
    "Notes on the {t}", "The {t} Question", "A Closer Look at the {t}", "Why the {t} Matters",
    "Life Around the {t}",
)
POSTSCRIPT_MARKERS: tuple[str, ...] = ("P.S.", "P.P.S.")

# The commonest English function words (and a few very common verbs and quantifiers).
FUNCTION_WORDS: frozenset[str] = frozenset("""
a an the and or but nor so yet for of to in on at by with from into onto over under up down out
off about above below after before during through between among against within without across
along around behind beyond near past since until upon toward towards is are was were be been
being am do does did done have has had having can could will would shall should may might must
it its this that these those there here i me my we us our you your he him his she her they them
their what which who whom whose when where why how all any both each every few more most many
much some such no not only own same than too very just also again ever often still even as if
then once because while though although whether one two other another new good like make makes
made get gets take takes
""".split())
