"""The console tells the state of the system, checked in a real browser (issue 31): a paused acid_compaction gets a
banner and queueing says the compaction will wait for it; a compaction's row opens onto its run figures with links
to its Airflow task log and its Spark application; no console page is wider than a 1440 px viewport; a refused
manual request shows its compaction 'refused' with the reason and a run that is not green.

One ``airflow api-server`` for the module (``airflow_server``); screenshots go to the artifacts folder (ui-state/).
The walkthrough in docs/operations.md shows four of them (docs/images/ui/); ``AIRFLOW_ACID_UI_IMAGES=docs/images/ui``
writes those there again."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.plugins.console_support import (
    BIN,
    SPARK_APP_ID,
    STEP_MS,
    TASK,
    launch_chromium,
    log_in,
    require_chromium,
)

pytestmark = pytest.mark.slow

WIDTH, HEIGHT = 1440, 900
PAGES = ("/acid/", "/acid/compactions", "/acid/transactions", "/acid/plan", "/acid/tables/default/sales",
         "/acid/tables/default/customers", "/acid/tables/default/sales/why?partition=ds%3D2024-01-01",
         "/acid/tables/default/customers/why", "/acid/dag/acid_compaction", "/acid/dag/acid_manual_compaction",
         "/acid/dag/acid_cleanup", "/acid/dag/acid_housekeeping", "/acid/dag/some_other_dag")
REFUSED = {"table": "sales", "partition": "ds=2024-01-03", "type": "major", "wait": True, "queue_anyway": True}
"""A MAJOR of a partition with one delta and no base, queued anyway: the Worker refuses it ("nothing to compact")."""


DOC_IMAGES = {"01-overview-paused.png": "overview-paused.png", "02-compaction-details.png": "compaction-details.png",
              "03-why.png": "why.png", "05-refused.png": "refused.png"}
"""Screenshots of this test (artifacts) → their names in docs/images/ui."""


@pytest.fixture(scope="module")
def shots(artifacts_dir):
    folder = artifacts_dir / "ui-state"
    folder.mkdir(parents=True, exist_ok=True)
    yield folder
    docs = os.environ.get("AIRFLOW_ACID_UI_IMAGES")
    if docs:
        for shot, name in DOC_IMAGES.items():
            if (folder / shot).exists():
                shutil.copyfile(folder / shot, Path(docs) / name)


@pytest.fixture
def page(airflow_server):
    """A Chromium page at 1440×900, logged in as admin."""
    require_chromium()
    from playwright.sync_api import expect, sync_playwright

    base, password, log = airflow_server
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            tab = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            tab.set_default_timeout(STEP_MS)
            expect.set_options(timeout=STEP_MS)
            log_in(tab, base, "admin", password)
            yield tab
            browser.close()
    except BaseException:
        print(f"--- airflow api-server log ({log}) ---\n{log.read_text()[-8000:]}")
        raise


def _api(page, method: str, path: str, body: dict | None = None) -> dict:
    """Airflow's REST API from the logged-in page (the UI's session cookie authenticates)."""
    return page.evaluate("""async ([method, path, body]) => {
        const r = await fetch(path, {method, headers: {"Content-Type": "application/json"},
                                     body: body === null ? undefined : JSON.stringify(body)});
        return {status: r.status, body: await r.json().catch(() => null)};
    }""", [method, path, body])


def test_a_paused_dag_is_said_and_queueing_says_the_compaction_will_wait(airflow_server, page, shots):
    from playwright.sync_api import expect

    base = airflow_server.base
    page.goto(f"{base}/acid/")
    banner = page.locator("[data-paused-dag=acid_compaction]")
    expect(banner).to_contain_text("acid_compaction is paused — queued compactions stay initiated")
    expect(page.locator("ul.dag-status li[data-dag=acid_cleanup] .badge")).to_have_text("paused")

    form = page.locator("#request form")
    form.locator("input[name=table]").fill("customers")
    form.get_by_role("button", name="Queue compaction").click()
    expect(form.locator(".result")).to_contain_text("already scheduled")  # the scene queued one
    form.locator("input[name=table]").fill("sales")
    form.locator("input[name=partition]").fill("ds=2024-01-01")
    form.locator("select[name=type]").select_option("minor")
    form.get_by_role("button", name="Queue compaction").click()
    result = form.locator(".result")
    expect(result).to_contain_text("MINOR compaction")
    expect(result).to_contain_text("acid_compaction is paused — the compaction stays 'initiated' until you unpause it")
    page.screenshot(path=shots / "01-overview-paused.png")

    # Unpaused, a DAG says when it runs next (the Next run page too).
    assert _api(page, "PATCH", "/api/v2/dags/acid_cleanup", {"is_paused": False})["status"] == 200
    page.goto(f"{base}/acid/plan")
    cleanup = page.locator("ul.dag-status li[data-dag=acid_cleanup]")
    expect(cleanup.locator(".badge")).to_have_text("active")
    expect(cleanup).to_contain_text(re.compile(r"next run \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"))
    expect(page.locator("[data-paused-dag=acid_cleanup]")).to_have_count(0)
    expect(page.locator("[data-paused-dag=acid_compaction]")).to_be_visible()


def test_a_compaction_opens_onto_its_figures_task_log_and_spark_ui(airflow_server, page, shots):
    from playwright.sync_api import expect

    base = airflow_server.base
    page.goto(f"{base}/acid/compactions")
    row = page.locator("#queue tbody.compaction", has_text="ready for cleaning")
    details = row.locator("tr.details")
    expect(details).to_be_hidden()
    row.locator("button.disclose").click()
    expect(details).to_be_visible()
    expect(details).to_contain_text("Deltas3 → 0")
    expect(details).to_contain_text(re.compile(r"Bytes[\d.]+ (B|KiB) → [\d.]+ (B|KiB)"))
    expect(details).to_contain_text("= out ✓")  # the digest of the output read back equals what was read
    log_link = details.locator("a.task-log")
    expect(log_link).to_have_text("acid_compaction › compact [0] · try 1")
    href = log_link.get_attribute("href")
    assert href == (f"/dags/{TASK.dag_id}/runs/scheduled__2024-01-02T00%3A00%3A00%2B00%3A00/tasks/compact/mapped/0"
                    "?try_number=1")
    assert log_link.get_attribute("target") == "_top"  # out of the console's frame inside Airflow
    spark = details.locator("a.spark-ui")
    expect(spark).to_have_text(SPARK_APP_ID)
    assert spark.get_attribute("href") == f"http://spark-history.example:18080/history/{SPARK_APP_ID}/jobs/"
    expect(row.locator("td").nth(8)).to_contain_text("waiting")  # cleaning has not happened yet
    expect(details).to_contain_text(re.compile(r"Cleaningwaiting \d"))
    page.screenshot(path=shots / "02-compaction-details.png")

    # Sorting by a header, and a date range.
    page.locator("#history-table, #queue-table").first.locator("th a.sort", has_text="Id").click()
    page.wait_for_url(re.compile(r"order_by=compactionid"))
    page.locator("input[name=enqueued_from]").fill("2000-01-01")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url(re.compile(r"enqueued_from=2000-01-01"))
    expect(page.locator("#queue tbody.compaction")).not_to_have_count(0)


def test_no_console_page_is_wider_than_the_viewport(airflow_server, page, shots):
    base = airflow_server.base
    too_wide = {}
    for path in PAGES:
        page.goto(f"{base}{path}")
        page.wait_for_load_state("load")
        # the widest the page can get: every column shown, every details row open
        page.evaluate("""() => {
            document.querySelectorAll("input[data-all-columns]").forEach(box => { if (!box.checked) box.click(); });
            document.querySelectorAll("button.disclose[aria-expanded=false]").forEach(b => b.click());
        }""")
        width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        if width[0] > width[1]:
            too_wide[path] = width
            page.screenshot(path=shots / f"too-wide-{len(too_wide)}.png", full_page=True)
    # Inside Airflow the console's frame is narrower than the window: the DAG tabs must fit their frame too.
    for dag_id in ("acid_compaction", "acid_cleanup"):
        page.goto(f"{base}/dags/{dag_id}/plugin/acid-dag")
        page.frame_locator("iframe[title='ACID']").locator("main").wait_for()
        frame = next(f for f in page.frames if "/acid/dag/" in f.url)
        frame.evaluate("""() => document.querySelectorAll("input[data-all-columns]").forEach(b => b.click())""")
        width = frame.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        if width[0] > width[1]:
            too_wide[f"DAG tab of {dag_id}"] = width
    assert too_wide == {}, f"pages wider than their window or frame (scrollWidth, innerWidth): {too_wide}"
    page.goto(f"{base}/acid/tables/default/sales/why?partition=ds%3D2024-01-01")
    page.screenshot(path=shots / "03-why.png")
    page.goto(f"{base}/acid/tables/default/sales")
    page.screenshot(path=shots / "04-table.png", full_page=True)


_CLIPPED_TABLES = """() => [...document.querySelectorAll(".table-wrap")]
    .filter(w => w.offsetParent !== null && w.scrollWidth > w.clientWidth + 1)
    .map(w => [w.querySelector("table")?.id || w.closest("section")?.querySelector("h2,h3")?.textContent.trim(),
               w.scrollWidth, w.clientWidth])"""
"""Tables whose card must scroll sideways to show every column (id or card title, scrollWidth, clientWidth)."""


def test_no_column_is_clipped_at_1440_px(airflow_server, page, refused_run):
    """With the columns a page shows by default, every table fits its card at 1440 px: no column (the Message of a
    refused compaction, the actions) hides behind the card's edge or the sticky actions column. "all columns" may
    scroll inside the card (the test above)."""
    base = airflow_server.base
    clipped = {}
    for path in (*PAGES, "/acid/compactions?state=refused"):
        page.goto(f"{base}{path}")
        page.wait_for_load_state("load")
        if found := page.evaluate(_CLIPPED_TABLES):
            clipped[path] = found
    assert clipped == {}, f"tables wider than their card at {WIDTH} px (table, scrollWidth, clientWidth): {clipped}"


@pytest.fixture(scope="module")
def refused_run(airflow_server):
    """``airflow dags test acid_manual_compaction`` with a request the Worker refuses, on the server's Airflow
    database (the run and its task instances are recorded there); returns the command's result."""
    from airflow_acid.client.warehouse import AcidWarehouse

    wh = AcidWarehouse(airflow_server.metastore, init=False)
    try:
        with wh.transaction() as txn:  # ds=2024-01-03: one delta, no base
            txn.insert("sales", [(7, 70)], partition={"ds": "2024-01-03"})
    finally:
        wh.close()
        wh.metastore.close()
    return subprocess.run([str(BIN / "airflow"), "dags", "test", "acid_manual_compaction", "-c", json.dumps(REFUSED)],
                          env=airflow_server.env, capture_output=True, text=True, timeout=600)


def _refused_row(page, base: str, run: subprocess.CompletedProcess):
    from playwright.sync_api import expect

    page.goto(f"{base}/acid/compactions?state=refused")
    row = page.locator("#history tbody.compaction", has_text="ds=2024-01-03")
    if row.count() != 1:
        print(f"--- airflow dags test (exit {run.returncode}) ---\n{run.stdout[-4000:]}\n{run.stderr[-4000:]}")
    expect(row).to_have_count(1)
    return row


def test_a_refused_manual_request_shows_its_compaction_refused_with_the_reason(airflow_server, page, refused_run,
                                                                                shots):
    from playwright.sync_api import expect

    row = _refused_row(page, airflow_server.base, refused_run)
    expect(row.locator("td .badge").first).to_have_text("refused")
    expect(row.locator("td.message")).to_contain_text("None of the compaction thresholds met")
    row.locator("button.disclose").click()
    details = row.locator("tr.details")
    expect(details).to_contain_text("found no base and 1 current delta(s)")
    expect(details).to_contain_text("the compaction did not commit")
    expect(details.locator("a.task-log")).to_contain_text("acid_manual_compaction › compact [0]")
    expect(details.locator("a.task-log + .badge")).to_be_visible()  # the task instance's state in Airflow
    page.screenshot(path=shots / "05-refused.png")


def test_a_refused_manual_request_is_not_a_green_run(airflow_server, page, refused_run):
    from playwright.sync_api import expect

    row = _refused_row(page, airflow_server.base, refused_run)
    row.locator("button.disclose").click()
    expect(row.locator("tr.details a.task-log + .badge")).to_have_text("failed", timeout=2000)
    runs = _api(page, "GET", "/api/v2/dags/acid_manual_compaction/dagRuns")["body"]["dag_runs"]
    assert runs and all(r["state"] == "failed" for r in runs), (
        [(r["dag_run_id"], r["state"]) for r in runs], refused_run.stdout[-3000:])
    assert refused_run.returncode != 0
    assert any("refused" in (r.get("note") or "") for r in runs), [r.get("note") for r in runs]
