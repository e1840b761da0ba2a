"""The real logs the tests read, from the project's own tree: the TextWorld and AgentDojo logs
the demo ships (studio/web/demo) and the Inspect AI samples (tests/data), all copied unchanged
from ../shared/data, so a clean clone tests them wherever it is checked out."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PLACES = (REPO / "studio" / "web" / "demo", REPO / "tests" / "data")


def data_file(name: str) -> Path:
    for place in PLACES:
        if (place / name).exists():
            return place / name
    raise FileNotFoundError(f"{name} is in neither {' nor '.join(map(str, PLACES))}")
