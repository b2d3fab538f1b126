"""Where the user's own data lives: ``ADVISOR_HOME``, layered over the knowledge bundled in the package.

The installed package is read-only. Everything the advisor learns on a user's machine — measured rows
(``advisor confirm``), probe profiles, Optuna studies, refits of the correction — goes under
``ADVISOR_HOME`` (default: the platform's user data directory, e.g. ``~/.local/share/advisor``)::

    ADVISOR_HOME/
        measurements/*.jsonl      rows of `advisor confirm` and campaigns, read after the bundled ones
        profiles/*.json           profiles written by `advisor probe`, found by name with --profile NAME
        calibration/fitted.json   the user's refit; used instead of the bundled fit when present
        studies/studies.db        the default Optuna SQLite storage (--storage sqlite)

Folders are created when something is written, never on import or on a read.
"""

from __future__ import annotations

import os
from pathlib import Path

BUNDLED = Path(__file__).parent
BUNDLED_MEASUREMENTS = BUNDLED / "measurements" / "own"
BUNDLED_PROFILES = BUNDLED / "measurements" / "profiles"
BUNDLED_CALIBRATION = BUNDLED / "calibration" / "fitted.json"
CONTRACT = BUNDLED / "CONTRACT.md"  # the prediction contract, shipped with the package
APP_NAME = "advisor"


def advisor_home() -> Path:
    """``$ADVISOR_HOME`` if set, else the platform's user data directory (not created here)."""
    env = os.environ.get("ADVISOR_HOME", "").strip()
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def _dir(name: str, create: bool) -> Path:
    path = advisor_home() / name
    if create:
        path.mkdir(parents=True, exist_ok=True)
    return path


def user_measurements_dir(create: bool = True) -> Path:
    """Folder of the user's own measured rows (``*.jsonl``)."""
    return _dir("measurements", create)


def user_profiles_dir(create: bool = True) -> Path:
    """Folder of the user's probe profiles (``*.json``)."""
    return _dir("profiles", create)


def user_studies_dir(create: bool = True) -> Path:
    """Folder of the default Optuna SQLite storage."""
    return _dir("studies", create)


def user_calibration_path(create: bool = True) -> Path:
    """Where a user's refit of the correction is written (its folder is created when ``create``)."""
    return _dir("calibration", create) / "fitted.json"


def calibration_file() -> Path:
    """The fit predictions use: the user's refit when one exists, else the bundled ``fitted.json``."""
    user = user_calibration_path(create=False)
    return user if user.is_file() else BUNDLED_CALIBRATION


def bundled_measurement_files() -> list[Path]:
    """The project's own measured rows shipped in the package (``*-links-*.jsonl`` are the links probe's
    raw logs, kept beside their ``.json`` result: not runs)."""
    return sorted(p for p in BUNDLED_MEASUREMENTS.glob("*.jsonl") if "-links-" not in p.name)


def user_measurement_files() -> list[Path]:
    """The user's measured rows under ``ADVISOR_HOME/measurements`` (none when the folder is absent)."""
    folder = user_measurements_dir(create=False)
    return sorted(folder.glob("*.jsonl")) if folder.is_dir() else []


def measurement_files() -> list[Path]:
    """Bundled rows first, then the user's: every JSON-lines file of own measurements, layered."""
    return bundled_measurement_files() + user_measurement_files()


def default_storage_url(name: str = "studies.db") -> str:
    """The SQLite URL of the default Optuna storage under ``ADVISOR_HOME/studies``."""
    return f"sqlite:///{user_studies_dir() / name}"


def storage_url(storage: str | None) -> str | None:
    """Resolve ``--storage``: None stays in memory; ``sqlite`` or a bare ``NAME.db`` go under ADVISOR_HOME/studies.

    A full URL (``sqlite:///path.db``, ``postgresql://…``) is used as given.
    """
    if storage is None:
        return None
    text = storage.strip()
    if "://" in text:
        return text
    if text in ("sqlite", "home", "default"):
        return default_storage_url()
    if text.endswith(".db") and "/" not in text and os.sep not in text:
        return default_storage_url(text)
    if text.endswith(".db"):  # a path: relative to the working directory, as the user typed it
        return f"sqlite:///{Path(text).expanduser().resolve()}"
    from knowledge.errors import AdvisorError

    raise AdvisorError(f"--storage {storage!r} is neither a URL (sqlite:///study.db, postgresql://…) nor 'sqlite' nor a NAME.db file")


def find_profile(name: str | Path) -> Path:
    """A profile by path, or by name among the user's profiles, then the bundled ones (``h100x1``…).

    Raises AdvisorError naming the closest profile names when none matches.
    """
    path = Path(name).expanduser()
    if path.is_file():
        return path
    stem = path.name.removesuffix(".json")
    folders = [user_profiles_dir(create=False), BUNDLED_PROFILES]
    candidates: dict[str, Path] = {}
    for folder in folders:
        if folder.is_dir():
            for p in sorted(folder.glob("*.json")):
                candidates.setdefault(p.stem, p)
    if stem in candidates and path.parent == Path("."):
        return candidates[stem]
    prefixed = [p for s, p in sorted(candidates.items()) if s.startswith(stem + "-")]
    if prefixed:  # 'h100x1' finds 'h100x1-quick'
        return prefixed[0]
    from knowledge.errors import AdvisorError, unknown

    if path.parent != Path(".") or path.suffix == ".json":
        raise AdvisorError(f"profile {str(name)!r} not found; profiles by name: {', '.join(sorted(candidates)) or 'none'}")
    raise unknown("profile", str(name), candidates.keys())
