"""A real headless Chromium for the tests that look at a page as a person would (Debian's `chromium` and
`chromedriver`, which `make test` installs as root): one set of flags, one way to start it and to say it is
missing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium")
DRIVER = shutil.which("chromedriver")
# Chromium as root, headless, touching no network and no profile of its own.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
)


def browser(profile: Path, *, window: tuple[int, int], console: bool = False) -> Iterator[Any]:
    """A selenium driver of a Chromium with `window` (width, height) and its own profile directory `profile`,
    quit when the generator closes; `console`: keep the browser console's messages (`get_log("browser")`).
    Call it only when `CHROMIUM` and `DRIVER` are there."""
    assert CHROMIUM is not None and DRIVER is not None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--window-size={window[0]},{window[1]}", f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if console:
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def missing() -> bool:
    """Whether Chromium or its driver is not installed."""
    return CHROMIUM is None or DRIVER is None
