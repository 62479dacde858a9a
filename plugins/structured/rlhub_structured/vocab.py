"""Word lists the structured domains generate names, titles and values from."""

from __future__ import annotations

FIRST_NAMES = ("Alice", "Bruno", "Chen", "Dalia", "Emeka", "Freya", "Goran", "Hana", "Ivan",
               "Jade", "Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa")
LAST_NAMES = ("Moreau", "Okafor", "Lindqvist", "Tanaka", "Silva", "Novak", "Haddad", "Kowalski",
              "Fischer", "Mensah", "Oliveira", "Petrov", "Nguyen", "Costa", "Brennan")
CITIES = ("Lyon", "Osaka", "Nairobi", "Porto", "Tallinn", "Quito", "Dublin", "Hanoi", "Perth",
          "Oslo", "Seville", "Krakow", "Accra", "Montreal", "Bergen")
COUNTRIES = ("France", "Japan", "Kenya", "Portugal", "Estonia", "Ecuador", "Ireland", "Vietnam",
             "Australia", "Norway", "Spain", "Poland", "Ghana", "Canada")
ADJECTIVES = ("Silent", "Golden", "Hidden", "Broken", "Distant", "Crimson", "Quiet", "Endless",
              "Frozen", "Wandering", "Bright", "Hollow")
NOUNS = ("Harbor", "Garden", "River", "Lantern", "Compass", "Forest", "Mirror", "Bridge",
         "Orchard", "Tower", "Meadow", "Signal")
WORDS = ("alpha", "border", "cobalt", "delta", "ember", "falcon", "granite", "horizon", "indigo",
         "juniper", "kestrel", "lagoon", "mosaic", "nimbus", "onyx", "prairie", "quartz", "raven")
PRODUCT_NOUNS = ("kettle", "lamp", "backpack", "blender", "headphones", "notebook", "umbrella",
                 "tripod", "thermos", "keyboard")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
