"""The console's actions in a real browser (issue 31 item 3): ``airflow api-server`` with the plugin, Debian's
headless Chromium. The admin aborts a queued compaction, requeues a failed one and aborts a reader's transaction
after the dialog listed what it blocks — each state change visible on the page; a viewer sees the same pages without
a single action button, and the API refuses the viewer's POST with 403. Screenshots go to the artifacts folder."""

from __future__ import annotations

import re

import pytest

from airflow_acid.acid.codes import CompactionType
from airflow_acid.metastore import Metastore
from tests.plugins.console_support import CHROMIUM, STEP_MS, require_chromium

VIEWER_PASSWORD = "acid-viewer-pw"


def _log_in(page, base: str, user: str, password: str) -> None:
    page.goto(f"{base}/acid/")
    page.fill("input[name=username]", user)
    page.fill("input[name=password]", password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/acid/$"))


def _confirm(page, title: str, expected: str, button: str) -> None:
    """The dialog opened by an action button: its title, one expected consequence, then confirm."""
    from playwright.sync_api import expect

    dialog = page.locator("dialog#acid-confirm")
    expect(dialog).to_be_visible()
    expect(dialog.locator("h3")).to_contain_text(title)
    expect(dialog.locator("ul.consequences")).to_contain_text(expected)
    dialog.get_by_role("button", name=button).click()


@pytest.mark.slow
def test_actions_in_the_browser(airflow_server, tmp_path, artifacts_dir):
    require_chromium()
    from playwright.sync_api import expect, sync_playwright

    base, password, _ = airflow_server
    metastore = getattr(airflow_server, "metastore", f"sqlite:///{tmp_path / 'metastore.db'}")
    with Metastore(metastore) as ms:
        queued = ms.compactions.find(state="initiated")[0].id
        failed = ms.compactions.enqueue("default", "sales", "ds=2024-01-02", CompactionType.MINOR).id
        ms.compactions.mark_failed(failed, "the Spark job ran out of memory")
        reader = next(t.txnid for t in ms.txns.show_transactions() if t.user == "analyst")
    shots = artifacts_dir / "ui-actions"
    shots.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1440, "height": 1000})
        page.set_default_timeout(STEP_MS)
        expect.set_options(timeout=STEP_MS)
        _log_in(page, base, "admin", password)

        # Abort the queued compaction: it leaves the queue for the history as 'aborted'.
        page.goto(f"{base}/acid/compactions")
        page.locator(f"#queue button[data-acid-action=abort-compaction][data-id='{queued}']").click()
        _confirm(page, f"Abort MAJOR compaction {queued} of default.customers", "take it off the queue",
                 "Abort compaction")
        result = page.locator("#acid-action-result")
        expect(result).to_contain_text(f"MAJOR compaction {queued} of default.customers is aborted")
        aborted = page.locator("#history tbody tr", has=page.locator("td:first-child",
                                                                     has_text=re.compile(f"^{queued}$")))
        expect(aborted.locator(".badge")).to_have_text("aborted")
        expect(page.locator(f"#queue button[data-id='{queued}']")).to_have_count(0)
        page.screenshot(path=shots / "01-compaction-aborted.png", full_page=True)

        # Requeue the failed one: a new 'initiated' row joins the queue.
        page.locator(f"#history button[data-acid-action=requeue-compaction][data-id='{failed}']").click()
        _confirm(page, f"Requeue MINOR compaction {failed} of default.sales/ds=2024-01-02",
                 "queue a new 'initiated' compaction", "Requeue")
        expect(result).to_contain_text(f"MINOR compaction {failed} of default.sales/ds=2024-01-02 ('failed') is "
                                       "requeued as compaction")
        new_id = re.search(r"requeued as compaction (\d+)", result.inner_text()).group(1)
        requeued = page.locator("#queue tbody tr", has=page.locator("td:first-child",
                                                                    has_text=re.compile(f"^{new_id}$")))
        expect(requeued.locator(".badge")).to_have_text("initiated")
        page.screenshot(path=shots / "02-compaction-requeued.png", full_page=True)

        # Abort the reader's transaction: the dialog first says what it blocks; cancel once, then confirm.
        page.get_by_role("link", name="Transactions & locks").click()
        abort_txn = page.locator(f"button[data-acid-action=abort-transaction][data-id='{reader}']")
        abort_txn.click()
        dialog = page.locator("dialog#acid-confirm")
        expect(dialog.locator("ul.consequences")).to_contain_text(
            "no longer waits for it")
        expect(dialog.locator("ul.consequences")).to_contain_text("it releases 1 lock(s): SHARED_READ on "
                                                                  "default.customers")
        page.screenshot(path=shots / "03-transaction-blockers.png")
        dialog.get_by_role("button", name="Cancel").click()
        expect(dialog).not_to_be_visible()
        expect(abort_txn).to_be_visible()  # nothing happened
        abort_txn.click()
        _confirm(page, f"Abort transaction {reader} of analyst@bi-host", "no longer waits for it", "Abort transaction")
        expect(result).to_contain_text(f"transaction {reader} (analyst@bi-host) is aborted by ui:admin")
        row = page.locator("table.data tbody tr", has=page.locator("td:first-child",
                                                                   has_text=re.compile(f"^{reader}$")))
        expect(row.locator(".badge")).to_have_text("aborted")
        expect(abort_txn).to_have_count(0)
        page.screenshot(path=shots / "04-transaction-aborted.png", full_page=True)

        # A viewer: the same pages, no action buttons; the API refuses a POST anyway.
        viewer = browser.new_context(viewport={"width": 1440, "height": 1000}).new_page()
        viewer.set_default_timeout(STEP_MS)
        _log_in(viewer, base, "viewer", VIEWER_PASSWORD)
        for path in ("/acid/compactions", "/acid/transactions", "/acid/tables/default/sales"):
            viewer.goto(f"{base}{path}")
            expect(viewer.locator("table.data").first).to_be_visible()
            expect(viewer.locator("button[data-acid-action]")).to_have_count(0)
        status = viewer.evaluate("""id => fetch(`/acid/api/compactions/${id}/requeue`, {method: "POST",
            headers: {"Content-Type": "application/json"}, body: "{}"}).then(r => r.status)""", failed)
        assert status == 403
        viewer.goto(f"{base}/acid/compactions")
        viewer.screenshot(path=shots / "05-viewer-no-buttons.png", full_page=True)
        browser.close()
