"""The scripted players (gem_players.py) are imported by name from the tests beside it."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
