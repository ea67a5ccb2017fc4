"""End to end in a real browser: ``airflow api-server`` with the plugin (entry point), SimpleAuthManager with a known
admin password, Debian's headless Chromium driven by Playwright. Log in on Airflow's login page, open the console
directly and through Airflow's navigation, request a compaction with the form and see it queued as 'initiated',
start acid_manual_compaction from the same form. Screenshots go to the artifacts folder."""

from __future__ import annotations

import re

import pytest

from tests.plugins.console_support import STEP_MS, launch_chromium, require_chromium


@pytest.mark.slow
def test_request_a_compaction_in_the_browser(airflow_server, artifacts_dir):
    require_chromium()
    from playwright.sync_api import expect, sync_playwright

    base, password, log = airflow_server
    shots = artifacts_dir / "ui-plugin"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        with sync_playwright() as pw:
            browser = launch_chromium(pw)
            page = browser.new_page(viewport={"width": 1440, "height": 1000})
            page.set_default_timeout(STEP_MS)
            expect.set_options(timeout=STEP_MS)

            # Anonymous: the console sends the browser to Airflow's login page, which brings it back.
            page.goto(f"{base}/acid/")
            expect(page.locator("input[name=username]")).to_be_visible()
            page.fill("input[name=username]", "admin")
            page.fill("input[name=password]", password)
            page.screenshot(path=shots / "01-login.png")
            page.get_by_role("button", name="Sign in").click()
            page.wait_for_url(re.compile(r"/acid/$"))
            expect(page.locator("#tables-table")).to_contain_text("default.sales")
            page.screenshot(path=shots / "02-overview.png", full_page=True)

            # The form queues ALTER TABLE default.sales PARTITION (ds='2024-01-01') COMPACT 'minor'.
            form = page.locator("#request form")
            form.locator("input[name=table]").fill("sales")
            form.locator("input[name=partition]").fill("ds=2024-01-01")
            form.locator("select[name=type]").select_option("minor")
            form.get_by_role("button", name="Queue compaction").click()
            expect(form.locator(".result")).to_contain_text("MINOR compaction")
            queued = page.locator("#queue tbody.compaction > tr:first-child", has_text="MINOR")
            expect(queued).to_contain_text("ds=2024-01-01")
            expect(queued.locator(".badge")).to_have_text("initiated")
            page.screenshot(path=shots / "03-queued.png", full_page=True)

            form.get_by_role("button", name="Queue compaction").click()  # Hive refuses a second one
            expect(form.locator(".result")).to_contain_text("already scheduled with state='initiated'")

            # The other way: a run of acid_manual_compaction through Airflow's REST API (paused DAG: waits).
            form.get_by_role("button", name="Trigger acid_manual_compaction").click()
            expect(form.locator(".result")).to_contain_text("Started run manual__")
            expect(form.locator(".result")).to_contain_text("paused")
            page.screenshot(path=shots / "04-dag-run.png", full_page=True)

            page.get_by_role("link", name="Compactions").click()
            page.locator("select[name=state]").select_option("initiated")  # filters submit on change
            page.wait_for_url(re.compile(r"state=initiated"))
            expect(page.locator("#queue tbody.compaction")).to_have_count(2)
            page.screenshot(path=shots / "05-compactions.png", full_page=True)
            page.get_by_role("link", name="Transactions & locks").click()
            expect(page.locator("main")).to_contain_text("analyst")
            page.screenshot(path=shots / "06-transactions.png", full_page=True)

            page.goto(f"{base}/acid/tables/default/sales")
            expect(page.locator("svg.chart").first).to_contain_text("threshold 10")
            page.screenshot(path=shots / "07-table-health.png", full_page=True)
            page.goto(f"{base}/acid/tables/default/sales/why?partition=ds%3D2024-01-01")
            expect(page.locator("ul.summary")).to_contain_text("MINOR compaction")
            expect(page.locator("ul.summary")).to_contain_text("Cleanup is blocked")
            page.screenshot(path=shots / "08-why.png", full_page=True)

            # Inside Airflow: the navigation entry and the DAG tab show the console in an iframe.
            page.goto(f"{base}/")
            page.get_by_role("link", name="ACID").first.click()  # the entry in Airflow's navigation
            page.wait_for_url(re.compile(r"/plugin/acid"))
            console = page.frame_locator("iframe[title='ACID']")
            expect(console.locator("#queue")).to_contain_text("MINOR")
            page.screenshot(path=shots / "09-airflow-nav.png")
            page.goto(f"{base}/dags/acid_cleanup/plugin/acid-dag")
            tab = page.frame_locator("iframe[title='ACID']")
            expect(tab.locator("main")).to_contain_text("What blocks cleanup")
            expect(tab.locator("main")).to_contain_text("analyst")
            page.screenshot(path=shots / "10-dag-tab.png")
            tab.get_by_role("link", name="Compactions").click()  # the console's own tabs work inside the DAG tab
            expect(tab.locator("#history")).to_contain_text("History")
            browser.close()
    except BaseException:
        print(f"--- airflow api-server log ({log}) ---\n{log.read_text()[-8000:]}")
        raise
