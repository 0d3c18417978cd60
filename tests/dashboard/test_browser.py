"""The dashboard as a person sees it, in a real headless Chromium (Debian's `chromium` and `chromedriver`,
which `make test` installs as root): the page loads, the queue tree shows the scheduler's numbers, a pending
job's reason is shown, and a change in the cluster appears without a reload.

Screenshots stay in pytest's temporary directory (`dashboard-*.png`) to be looked at. Without Chromium the
tests are skipped with that reason (`apt-get install chromium chromium-driver`; `make test` installs them when
it runs as root).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kai_scheduler.dashboard import view
from tests import chromium
from tests.dashboard import serving
from tests.dashboard.scenarios import CLUSTER

QUEUE_CELLS_JS = """
const out = {};
for (const tr of document.querySelectorAll('#queues tbody tr')) {
  const gpu = tr.querySelector('td[data-res="GPU"]').dataset;
  out[tr.dataset.queue] = {allocated: +gpu.allocated, fair: +gpu.fair, deserved: +gpu.deserved,
                           requested: +gpu.requested, limit: +gpu.limit, over: tr.dataset.over === '1'};
}
return out;
"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    if chromium.missing():
        pytest.skip("chromium and chromedriver are not installed (apt-get install chromium chromium-driver)")
    yield from chromium.browser(tmp_path_factory.mktemp("chromium-profile"), window=(1400, 1100), console=True)


def _console_errors(browser: Any) -> list[str]:
    """The browser console's errors since the last call (failed requests included)."""
    return [str(e["message"]) for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def _until(check: Callable[[], Any], what: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_page_shows_the_schedulers_numbers_reasons_and_live_changes(browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    with serving.embedded(tmp_path, CLUSTER, cycles=3) as served:
        _until(lambda: served.source.done >= 3, "three cycles")
        browser.get(served.url)
        _until(lambda: browser.execute_script("return document.body.dataset.version"), "the first picture")
        # The queue tree is the scheduler's: the shares of its last cycle, to the digit.
        shares = served.source.cluster.results[-1].queue_shares
        shown = _until(lambda: browser.execute_script(QUEUE_CELLS_JS), "the queue rows")
        assert set(shown) == {"org", "research", "vision", "nlp", "serving"}
        for name, share in shares.items():
            gpu = shown[name]
            assert gpu["allocated"] == pytest.approx(float(share.allocated[2])), name
            assert gpu["fair"] == pytest.approx(float(share.fair_share[2])), name
            assert gpu["deserved"] == pytest.approx(float(share.deserved[2])), name
            assert gpu["requested"] == pytest.approx(float(share.request[2])), name
        assert shown["vision"]["over"] and not shown["nlp"]["over"]
        tag = browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="vision"] .over-tag').text
        assert tag.startswith("over quota: GPU"), tag  # the tag names the resources above deserved
        assert shown["vision"]["limit"] == 6
        assert _console_errors(browser) == []  # a live page asks for no timeline it lacks
        browser.save_screenshot(str(tmp_path / "dashboard-overview.png"))

        # A click on a queue lists its jobs in order, the pending one with the PodGroup's condition text.
        browser.find_element(By.CSS_SELECTOR, 'tr[data-queue="nlp"]').click()
        row = _until(
            lambda: browser.find_elements(By.CSS_SELECTOR, 'tr[data-job="default/nlp-gang"]'), "the nlp-gang row"
        )[0]
        snap = served.source.cluster.view()
        gang = next(j for j in snap.jobs.values() if j.name == "nlp-gang")
        expected = view.reason(gang, snap)
        del snap
        assert expected and "untolerated taint" in expected
        assert row.find_element(By.CSS_SELECTOR, "td.reason").text == expected
        assert row.find_element(By.CSS_SELECTOR, "td").text == "1"  # first in its queue's order
        browser.save_screenshot(str(tmp_path / "dashboard-jobs.png"))

        # A change in the cluster shows without a reload: a new queue arrives over the stream.
        marker = browser.execute_script("window.__same_page = true; return document.body.dataset.version")
        served.source.cluster.store.create(
            {
                "apiVersion": "scheduling.run.ai/v2",
                "kind": "Queue",
                "metadata": {"name": "arrivals"},
                "spec": {"parentQueue": "org", "resources": {"gpu": {"quota": 1, "overQuotaWeight": 1, "limit": -1}}},
            }
        )
        _until(lambda: browser.find_elements(By.CSS_SELECTOR, 'tr[data-queue="arrivals"]'), "the new queue", timeout=5)
        assert browser.execute_script("return window.__same_page === true")  # no reload happened
        assert int(browser.execute_script("return document.body.dataset.version")) > int(marker)
        browser.save_screenshot(str(tmp_path / "dashboard-live.png"))


def test_gpu_map_is_drawn(browser: Any, tmp_path: Path) -> None:
    with serving.embedded(tmp_path, CLUSTER, cycles=2) as served:
        _until(lambda: served.source.done >= 2, "two cycles")
        browser.get(served.url)
        _until(lambda: browser.execute_script("return document.body.dataset.version"), "the first picture")
        summary = browser.execute_script("return document.querySelector('#gpu-summary').textContent")
        assert summary.startswith("12 GPUs on 3 nodes")
        # Some pixels of the canvas are a queue's colour: the map is drawn, not blank.
        coloured = browser.execute_script(
            """const c = document.querySelector('#map'); const d = c.getContext('2d')
                 .getImageData(0, 0, c.width, c.height).data; let n = 0;
               for (let i = 0; i < d.length; i += 4) if (d[i+2] > 150 && d[i] < 120) n++; return n;"""
        )
        assert coloured > 50
        browser.save_screenshot(str(tmp_path / "dashboard-map.png"))


def test_a_simulation_is_scrubbed_along_virtual_time(browser: Any, tmp_path: Path) -> None:
    import orjson

    from kai_scheduler.cli import main
    from kai_scheduler.dashboard import serve
    from tests.sim.test_plots import TREE

    scenario = tmp_path / "tree.yaml"
    scenario.write_text(TREE)
    out = tmp_path / "sim"
    assert main(["simulate", str(scenario), "--no-progress", "--no-report", "--dashboard", "--out", str(out)]) == 0
    frames = orjson.loads((out / "dashboard.json").read_bytes())["frames"]
    with serve.recorded(str(out / "dashboard.json")) as target:
        server = serve.listen(target, "127.0.0.1", 0)
        try:
            browser.get(f"http://127.0.0.1:{server.port}/")
            _until(lambda: browser.execute_script("return !document.querySelector('#timeline').hidden"), "slider")
            for k in (0, len(frames) // 2, len(frames) - 1):
                browser.execute_script(
                    "const s = document.querySelector('#scrub'); s.value = arguments[0];"
                    "s.dispatchEvent(new Event('input'));",
                    k,
                )
                _until(lambda k=k: browser.execute_script("return document.body.dataset.version") is not None, "")
                want = {q["name"]: q["allocated"][0] for q in frames[k]["queues"]}
                shown = _until(
                    lambda want=want: (
                        (s := browser.execute_script(QUEUE_CELLS_JS))
                        and {n: v["allocated"] for n, v in s.items()} == want
                        and s
                    ),
                    f"frame {k}",
                )
                assert shown
                label = browser.execute_script("return document.querySelector('#scrub-time').textContent")
                assert label.endswith(f"({k + 1}/{len(frames)})")
                if k == len(frames) // 2:
                    browser.save_screenshot(str(tmp_path / "dashboard-simulation.png"))
        finally:
            server.stop()
