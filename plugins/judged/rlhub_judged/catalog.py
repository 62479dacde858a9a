"""The hand-written material of the judged domains: concepts, conversations, preference pairs.

Every entry carries the trusted text the judge grades against: a reference answer (the gold
completion), and key points (the grading notes). Preference items also carry a weaker baseline
answer, the opponent a candidate must beat in pairwise mode.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Concept:
    """A concept to explain, with a reference explanation and the points it must cover."""

    name: str
    reference: str
    key_points: tuple[str, ...]


@dataclass(frozen=True)
class Conversation:
    """A dialogue so far (alternating user/assistant turns, ending with the user) and a reply."""

    system: str
    turns: tuple[str, ...]
    reference: str
    key_points: tuple[str, ...]


@dataclass(frozen=True)
class Preference:
    """A question with a strong answer (gold), a weaker baseline answer, and key points."""

    question: str
    gold: str
    baseline: str
    key_points: tuple[str, ...]


AUDIENCES = ("a curious twelve-year-old", "a first-year university student",
             "a busy manager with no technical background")

CONCEPTS: tuple[Concept, ...] = (
    Concept("photosynthesis",
            "Photosynthesis is how plants make their own food. Inside the chloroplasts of their "
            "leaves, the green pigment chlorophyll captures energy from sunlight. Plants use that "
            "energy to combine water taken up by the roots with carbon dioxide from the air, "
            "producing glucose, a sugar that stores energy, and releasing oxygen as a by-product. "
            "Almost all the oxygen we breathe and the food we eat depends on this process.",
            ("chlorophyll in chloroplasts captures sunlight", "water and carbon dioxide are inputs",
             "glucose stores the energy", "oxygen is released")),
    Concept("inflation",
            "Inflation is the general rise in prices across an economy over time, which means each "
            "unit of money buys a little less than before. It happens when demand for goods grows "
            "faster than supply, when production costs such as wages or energy rise, or when the "
            "money supply expands quickly. Central banks usually aim for low, stable inflation of "
            "about two percent and raise interest rates to cool it when it runs too high.",
            ("prices rise in general", "purchasing power of money falls",
             "causes: demand, costs, money supply", "central banks use interest rates")),
    Concept("vaccination",
            "A vaccine trains the immune system to recognise a germ without causing the disease. "
            "It "
            "contains a harmless piece or weakened form of the virus or bacterium, or instructions "
            "to make one of its proteins. The immune system responds by producing antibodies and "
            "memory cells. If the real germ arrives later, those memory cells recognise it and "
            "fight it off quickly, so the person is protected or gets only a mild illness.",
            ("harmless piece or weakened germ", "immune system makes antibodies",
             "memory cells remember", "faster response prevents disease")),
    Concept("public-key encryption",
            "Public-key encryption uses a pair of mathematically linked keys. The public key can "
            "be "
            "shared with anyone and is used to lock, or encrypt, a message. Only the matching "
            "private key, which its owner keeps secret, can unlock, or decrypt, it. Because the "
            "private key never has to be sent, two strangers can communicate securely over the "
            "internet, and the same idea lets the owner sign messages that anyone can verify.",
            ("a linked pair of keys", "public key encrypts and is shared",
             "private key decrypts and stays secret",
             "enables secure communication and signatures")),
    Concept("plate tectonics",
            "Plate tectonics says the Earth's outer shell is broken into large rigid plates that "
            "float slowly on the hotter, softer mantle beneath. Heat from the interior drives them "
            "a few centimetres a year. Where plates pull apart, new crust forms; where they "
            "collide, "
            "mountains rise or one plate sinks under another; where they slide past each other, "
            "stress builds up and is released as earthquakes. This explains volcanoes and "
            "mountains.",
            ("outer shell made of plates", "plates move on the mantle",
             "boundaries: apart, collide, slide", "causes earthquakes, volcanoes and mountains")),
    Concept("supply and demand",
            "Supply and demand describes how prices are set in a market. Demand is how much buyers "
            "want at each price; they buy more when the price is lower. Supply is how much sellers "
            "offer at each price; they offer more when the price is higher. The market price "
            "settles where the two meet, the equilibrium. A shortage pushes the price up and a "
            "surplus pushes it down until buyers and sellers agree again.",
            ("demand falls as price rises", "supply rises as price rises",
             "equilibrium price where they meet", "shortages and surpluses move the price")),
    Concept("machine learning overfitting",
            "Overfitting happens when a machine learning model learns its training examples too "
            "closely, including their noise and accidents, instead of the general pattern. It then "
            "scores very well on the training data but poorly on new data it has not seen. It is "
            "detected by holding out a validation set, and reduced with more data, simpler models, "
            "regularisation or stopping training early.",
            ("model memorises noise in the training data", "good on training, bad on new data",
             "detected with a held-out validation set", ("fixed by more data, regularisation, "
             "simpler models, early stopping"))),
    Concept("the water cycle",
            "The water cycle is the continuous movement of water around the Earth. The sun heats "
            "oceans and lakes, so water evaporates into vapour and rises. As it cools high in the "
            "air it condenses into tiny droplets that form clouds. When the droplets grow heavy "
            "they fall as precipitation such as rain or snow, which flows into rivers, soaks into "
            "the ground and returns to the sea, where the cycle starts again.",
            ("evaporation driven by the sun", "condensation forms clouds",
             "precipitation as rain or snow", "collection in rivers, ground and oceans")),
)

CONVERSATIONS: tuple[Conversation, ...] = (
    Conversation("You are a friendly cooking assistant.",
                 ("I want to bake bread but I have no yeast.",
                  "You can still make bread. Do you have baking soda or baking powder?",
                  "I have baking powder. What can I make?"),
                 "With baking powder you can make a quick soda-style bread. Mix 3 cups of flour, "
                 "1 tablespoon of baking powder, 1 teaspoon of salt and 1 tablespoon of sugar, "
                 "then "
                 "stir in about 1 and a half cups of milk until a soft dough forms. Shape it into "
                 "a "
                 "round loaf and bake at 200 C for about 35 minutes, until it sounds hollow when "
                 "tapped. Do not knead it much, or it will be tough.",
                 ("quick bread with baking powder", "gives amounts of flour, baking powder, milk",
                  "oven temperature and time", "avoid over-kneading")),
    Conversation("You are a patient study coach.",
                 ("I have an exam in three days and I feel overwhelmed.",),
                 "That is a stressful spot, but three days is enough to make real progress. First, "
                 "list the topics and mark the ones you know least. Split each day into focused "
                 "blocks of about 45 minutes with short breaks, and spend most blocks on the weak "
                 "topics using practice questions rather than rereading. End each day with a quick "
                 "review, and sleep properly: memory consolidates during sleep.",
                 ("acknowledges the stress", "prioritise weak topics", ("timed study blocks with "
                  "breaks"), "active practice over rereading", "sleep")),
    Conversation("You are a helpful assistant for travellers.",
                 ("I'm flying to Tokyo next week. Any tips for the first day?",
                  "Sure! Are you more interested in sightseeing or in getting settled?",
                  "Getting settled, I'll be jet-lagged."),
                 "For a jet-lagged first day, keep it simple. Buy a rechargeable transit card "
                 "such as "
                 "Suica or Pasmo at the airport so trains are easy. Get outside in daylight in the "
                 "afternoon to reset your body clock, eat a light meal at a convenience store or a "
                 "small noodle shop near your hotel, and try to stay awake until about 9 pm local "
                 "time. Carry some cash, since smaller places may not take cards.",
                 ("transit card like Suica or Pasmo", "daylight to reset body clock",
                  "stay awake until evening", "carry cash")),
    Conversation("You are a supportive fitness assistant.",
                 ("Can you give me a simple plan to start running? I've never run before.",),
                 "A good start is a walk-run plan three times a week. Warm up with five minutes of "
                 "brisk walking, then alternate one minute of easy running with two minutes of "
                 "walking, eight times. Each week, run a little longer and walk a little less. Run "
                 "at a pace where you can still talk, rest a day between sessions, and stop if you "
                 "feel sharp pain. Comfortable shoes matter more than fancy gear.",
                 ("walk-run intervals", "three times a week with rest days", "gradual progression",
                  "easy conversational pace", "stop on sharp pain")),
    Conversation("You are a careful personal-finance assistant.",
                 ("How do I start an emergency fund?",),
                 "Start by setting a first target of one month of essential expenses, then build "
                 "toward three to six months. Open a separate savings account so the money is not "
                 "spent by accident, and set up an automatic transfer on payday, even a small one. "
                 "Put windfalls like tax refunds in it too. Only use it for real emergencies, such "
                 "as losing your job or an urgent repair, and refill it afterwards.",
                 ("target of three to six months of expenses", "separate savings account",
                  "automatic transfers", "use only for real emergencies")),
    Conversation("You are a helpful assistant for gardeners.",
                 ("The leaves on my tomato plants are turning yellow from the bottom up. Why?",),
                 "Yellowing that starts on the lowest leaves is most often a nitrogen shortage or "
                 "uneven watering. Older leaves give up nitrogen to new growth, so feed the plants "
                 "with a balanced fertiliser and water deeply at the base on a regular schedule. "
                 "If "
                 "the yellow leaves also have brown spots with rings, it may be early blight: "
                 "remove "
                 "those leaves, avoid wetting the foliage and give the plants more air.",
                 ("nitrogen deficiency", "uneven watering", "fertilise and water at the base",
                  "early blight as alternative: remove leaves")),
)

PREFERENCES: tuple[Preference, ...] = (
    Preference("How do I keep a basil plant alive indoors?",
               "Give basil at least six hours of direct sun a day, ideally on a south-facing "
               "window sill, or a grow light. Water when the top of the soil feels dry, and use a "
               "pot with drainage holes so the roots never sit in water. Pinch off flower buds and "
               "harvest from the top, just above a pair of leaves, so the plant grows bushy.",
               "Put it near a window and water it regularly.",
               ("six hours of direct sun or grow light", "water when topsoil is dry",
                "drainage holes", "pinch flower buds and harvest from the top")),
    Preference("What should I do if my laptop gets soaked with water?",
               "Turn it off immediately and unplug it, and remove the battery if you can. Do not "
               "try to turn it back on. Tip it upside down in a tent shape to drain, wipe off the "
               "visible water, then let it dry for at least 48 hours in a warm, airy place. Rice "
               "does not help. If it was sweet or salty liquid, take it to a repair shop for "
               "cleaning before powering it on.",
               "Dry it with a towel and try turning it on again.",
               ("power off and unplug immediately", "do not turn it on", ("drain upside down and "
                "dry "
                "48 hours"), "repair shop for sugary or salty liquid")),
    Preference("How can I fall asleep faster?",
               "Keep a fixed wake-up time every day, even on weekends, and get daylight in the "
               "morning. Avoid caffeine after early afternoon and screens in the last hour before "
               "bed. Keep the bedroom cool, dark and quiet. If you cannot sleep after about twenty "
               "minutes, get up and do something calm in dim light until you feel sleepy.",
               "Try to relax and avoid coffee.",
               ("fixed wake-up time", "morning daylight", "no caffeine late or screens before bed",
                "cool dark quiet room", "get up if awake after twenty minutes")),
    Preference("How do I write a good cover letter?",
               "Address it to a named person if possible and open with the role and why you want "
               "it. In two short paragraphs, match your most relevant achievements to the job "
               "description, with numbers where you can. Show you know the company. Close by "
               "asking for an interview, keep it under one page, and proofread it carefully.",
               "Say why you want the job and list your skills.",
               ("address a named person", "match achievements to the job description",
                "show knowledge of the company", "ask for an interview", "one page, proofread")),
    Preference("How do I remove a red wine stain from a carpet?",
               "Act quickly: blot, do not rub, with a clean cloth to lift as much wine as "
               "possible. "
               "Pour a little cold water on the stain and blot again. Then apply a mix of one "
               "tablespoon of dish soap and one of white vinegar in two cups of warm water, blot "
               "until the stain lifts, rinse with cold water and blot dry.",
               "Use some soap and water on it.",
               ("blot, do not rub", "act quickly", "cold water first",
                "dish soap and white vinegar solution", "rinse and blot dry")),
    Preference("How can I make my passwords more secure?",
               "Use a password manager to create and store a long, unique password for every "
               "account, so one leak does not expose the others. Prefer passphrases of at least "
               "fifteen characters. Turn on two-factor authentication, ideally with an app or a "
               "security key rather than SMS, and change any password that appears in a breach.",
               "Use strong passwords with symbols and numbers.",
               ("password manager", "unique password per account", "long passphrases",
                "two-factor authentication with app or key", "change breached passwords")),
)
