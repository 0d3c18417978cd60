"""The HTML report as a person sees it: rendered by a real headless Chromium (Debian's `chromium` and
`chromedriver`, which `make test` installs), every plot shown under its title, and the page not blank.

The screenshots stay in pytest's temporary directory (`report-*.png`) to be looked at. Without Chromium the
test is skipped on a developer's machine and fails in CI, where `make test` must have installed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.cli import main
from tests import chromium
from tests.sim.test_plots import TREE

TITLES = [
    "Cluster allocation over time",
    "Per-queue share vs fair share",
    "Wait-time distributions",
    "Node × GPU occupancy",
    "Fairness over time",
]
FIGURES_JS = """
return Array.from(document.images).map(img => {
  const figure = img.closest('figure');
  const heading = figure ? figure.querySelector('h2') : null;
  const box = img.getBoundingClientRect();
  return {title: heading ? heading.innerText.trim() : '', loaded: img.complete && img.naturalWidth > 0,
          width: box.width, height: box.height, alt: img.alt};
});
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if chromium.missing():
        if os.environ.get("CI"):
            pytest.fail("chromium and chromedriver are not installed: `make test` installs them (as root)")
        pytest.skip("chromium and chromedriver are not installed (`make test` installs them as root)")
    yield from chromium.browser(tmp_path_factory.mktemp("chromium-profile"), window=(1280, 900))


def _report(tmp_path: Path, *args: str) -> Path:
    scenario = tmp_path / "tree.yaml"
    scenario.write_text(TREE)
    out = tmp_path / "report"
    assert main(["simulate", str(scenario), "--no-progress", "--out", str(out), *args]) == 0
    return out / "report.html"


def _look(browser: Any, page: Path, screenshot: Path) -> list[dict[str, Any]]:
    """Open the page, wait for its images, screenshot it whole; the figures as the browser laid them out."""
    browser.get(page.as_uri())
    browser.set_script_timeout(20)
    browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        Promise.all(Array.from(document.images).map(i => i.decode().catch(() => null))).then(() => done(true));
    """)
    figures: list[dict[str, Any]] = browser.execute_script(FIGURES_JS)
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1280, min(int(height) + 100, 16000))
    assert browser.save_screenshot(str(screenshot))
    return figures


def _not_blank(screenshot: Path) -> None:
    from PIL import Image

    with Image.open(screenshot) as image:
        pixels = image.convert("RGB")
        width, height = pixels.size
        assert width >= 1000 and height >= 2000, pixels.size  # the whole page, not one screen
        small = pixels.resize((width // 4, height // 4))
        colours = small.getcolors(maxcolors=1 << 20) or []
        inked = sum(count for count, rgb in colours if sum(rgb) < 3 * 235)
        assert len(colours) > 50, "the page is flat"
        assert inked > 0.03 * (width // 4) * (height // 4), "the page is nearly empty"


def test_the_report_renders_with_every_plot_under_its_title(browser: Any, tmp_path: Path) -> None:
    page = _report(tmp_path)
    shot = tmp_path / "report-single.png"
    figures = _look(browser, page, shot)
    assert [f["title"] for f in figures] == TITLES
    for figure in figures:
        assert figure["loaded"], figure["alt"]
        assert figure["width"] > 500 and figure["height"] > 100, figure
    _not_blank(shot)
    text = browser.find_element("tag name", "body").text
    for name in ("research", "vision", "nlp", "product", "search"):
        assert name in text  # the queue table holds the whole tree


def test_a_comparison_shows_each_run_under_its_label(browser: Any, tmp_path: Path) -> None:
    a, b = tmp_path / "spread.yaml", tmp_path / "binpack.yaml"
    a.write_text("tiers:\n- plugins:\n  - name: proportion\n  - name: nodeplacement\n    arguments: {gpu: spread}\n")
    b.write_text("tiers:\n- plugins:\n  - name: proportion\n  - name: nodeplacement\n    arguments: {gpu: binpack}\n")
    page = _report(tmp_path, "--compare", str(a), str(b))
    shot = tmp_path / "report-compare.png"
    figures = _look(browser, page, shot)
    titles = [f["title"] for f in figures]
    assert titles == [TITLES[0], TITLES[1], TITLES[1], TITLES[2], TITLES[3], TITLES[3], TITLES[4]]
    assert all(f["loaded"] and f["width"] > 300 for f in figures)
    assert {f["alt"] for f in figures if f["title"] == TITLES[1]} == {f"{TITLES[1]}: spread", f"{TITLES[1]}: binpack"}
    _not_blank(shot)
