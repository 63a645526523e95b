"""The console in a real browser: Debian's headless Chromium, driven by Selenium through
/usr/bin/chromedriver (Selenium Manager never runs: the driver's path is given and SE_OFFLINE is
set). An analyst and an approver sign in, browse the seed's runs, the approver grants one
request and denies another and sees both in the trail, and nobody sees globex's run."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import PASSWORDS

BASE = os.environ["CONSOLE_URL"]
SHOTS = Path(os.environ.get("CONSOLE_SCREENSHOTS", Path(__file__).parent / "screenshots"))
os.environ.setdefault("SE_OFFLINE", "true")


@pytest.fixture
def browser() -> Iterator[WebDriver]:
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1400,1000",
        "--disable-extensions",
        "--no-first-run",
    ):
        opts.add_argument(arg)
    driver = webdriver.Chrome(
        service=Service(executable_path="/usr/bin/chromedriver"), options=opts
    )
    driver.implicitly_wait(2)
    try:
        yield driver
    finally:
        driver.quit()


def gone(old: WebElement) -> Any:
    """EC.staleness_of, also for the other answer chromedriver gives for an element of a page
    being replaced: "Node with given id does not belong to the document"."""

    def check(_driver: WebDriver) -> bool:
        try:
            old.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise

    return check


def submit(driver: WebDriver, button: WebElement) -> None:
    """Click a form's button and wait for the page it leads to."""
    old = driver.find_element(By.TAG_NAME, "html")
    button.click()
    WebDriverWait(driver, 10).until(gone(old))


def shot(driver: WebDriver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    height = driver.execute_script("return document.documentElement.scrollHeight")
    driver.set_window_size(1400, min(max(int(height) + 40, 600), 4000))
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(1400, 1000)


def sign_in(driver: WebDriver, role: str, scope: str, password: str | None = None) -> None:
    driver.get(BASE + "/login")
    driver.find_element(By.ID, "role-input").send_keys(role)
    driver.find_element(By.ID, "password-input").send_keys(
        PASSWORDS[role] if password is None else password
    )
    submit(driver, driver.find_element(By.ID, "sign-in"))
    assert driver.current_url.endswith("/scope"), driver.page_source[:2000]
    Select(driver.find_element(By.ID, "scope-select")).select_by_value(scope)
    submit(driver, driver.find_element(By.ID, "enter-scope"))
    assert driver.current_url.endswith("/runs")
    assert driver.find_element(By.ID, "scope-in-force").text == scope
    assert driver.find_element(By.ID, "role").text == role


def sign_out(driver: WebDriver) -> None:
    submit(driver, driver.find_element(By.ID, "sign-out"))
    assert "/login" in driver.current_url
    driver.get(BASE + "/runs")
    assert "/login" in driver.current_url


def test_wrong_password_in_the_browser(browser: WebDriver) -> None:
    browser.get(BASE + "/login")
    browser.find_element(By.ID, "role-input").send_keys("console_ana")
    browser.find_element(By.ID, "password-input").send_keys("not-her-password")
    submit(browser, browser.find_element(By.ID, "sign-in"))
    assert "Sign-in failed" in browser.find_element(By.ID, "sign-in-error").text
    browser.get(BASE + "/runs")
    assert "/login" in browser.current_url


def test_analyst_browses_and_cannot_see_globex(browser: WebDriver, ids: dict[str, Any]) -> None:
    sign_in(browser, "console_ana", "acme/platform")
    rows = browser.find_elements(By.CSS_SELECTOR, "#runs tr.run")
    agents = [r.find_element(By.CSS_SELECTOR, ".agent").text for r in rows]
    assert '<script>alert("agent")</script>' in agents, agents  # shown as text, not run
    assert not any("globex" in a for a in agents)
    assert not any("finance-bot" in a for a in agents), "finance data is not acme/platform's"
    shot(browser, "runs-analyst")
    browser.get(f"{BASE}/runs/{ids['hostile_run']}")
    assert browser.find_element(By.ID, "run-agent").text == '<script>alert("agent")</script>'
    assert "intact" in browser.find_element(By.ID, "verify").text
    chips = [c.text for c in browser.find_elements(By.CSS_SELECTOR, ".chip.origin")]
    assert "origin:webhook/zendesk" in chips
    browser.get(f"{BASE}/runs/{ids['globex_run']}")
    assert "No run with this id is visible" in browser.find_element(By.ID, "not-found").text
    assert "globex secret plan" not in browser.page_source
    sign_out(browser)


def test_approver_grants_one_denies_another(browser: WebDriver, ids: dict[str, Any]) -> None:
    sign_in(browser, "console_apo", "acme")
    shot(browser, "runs")

    # the seed's run: blocked calls with their rule and the product page's explanation
    browser.get(f"{BASE}/runs/{ids['seed_run']}")
    steps = browser.find_elements(By.CSS_SELECTOR, "#steps tr.step")
    assert len(steps) >= 10
    text = browser.find_element(By.ID, "steps").text
    assert "untrusted_to_irreversible" in text and "data_barrier" in text
    assert "This is not a policy to edit and not a missing approval" in text
    assert "granted by demo_alice" in text
    assert browser.find_elements(By.CSS_SELECTOR, ".chip.escaping"), (
        "finance labels marked as escaping"
    )
    assert "intact" in browser.find_element(By.ID, "verify").text
    shot(browser, "run")

    # the support run read finance-bot's artifact: the read names its origin run, the lineage is
    # drawn
    browser.get(f"{BASE}/runs/{ids['support_run']}")
    read = browser.find_element(By.CSS_SELECTOR, "tr.kind-context_read")
    assert read.find_element(By.CSS_SELECTOR, ".digest").text.strip()
    assert read.find_element(By.CSS_SELECTOR, f'a[href="/runs/{ids["finance_run"]}"]')
    svg = browser.find_element(By.ID, "lineage")
    assert "finance-bot" in svg.get_attribute("innerHTML")
    assert len(svg.find_elements(By.CSS_SELECTOR, "rect")) >= 2
    shot(browser, "run-lineage")

    # the queue: the concrete calls, not globex's
    browser.get(BASE + "/approvals")
    assert browser.find_elements(By.ID, f"request-{ids['grant_me']}")
    assert not browser.find_elements(By.ID, f"request-{ids['globex_request']}")
    card = browser.find_element(By.ID, f"request-{ids['grant_me']}")
    assert '"ticket": 4321' in card.find_element(By.CSS_SELECTOR, ".args").text
    assert "reversible_write" in card.text and "origin:webhook/zendesk" in card.text
    shot(browser, "approvals")
    card.find_element(By.CSS_SELECTOR, ".reason-input").send_keys("checked with the customer <ok>")
    submit(browser, card.find_element(By.CSS_SELECTOR, "button.grant"))
    assert f"Request {ids['grant_me']} granted." in browser.page_source
    card = browser.find_element(By.ID, f"request-{ids['deny_me']}")
    card.find_element(By.CSS_SELECTOR, ".reason-input").send_keys("not this tool")
    submit(browser, card.find_element(By.CSS_SELECTOR, "button.deny"))
    assert f"Request {ids['deny_me']} denied." in browser.page_source
    assert not browser.find_elements(By.ID, f"request-{ids['grant_me']}")
    assert not browser.find_elements(By.ID, f"request-{ids['deny_me']}")
    decisions = browser.find_element(By.ID, "decisions").text
    assert "checked with the customer <ok>" in decisions and "not this tool" in decisions

    # ... and in the run's trail
    browser.get(f"{BASE}/runs/{ids['hostile_run']}")
    req = browser.find_element(By.ID, f"step-{ids['grant_me']}").text
    assert "granted by console_apo" in req
    assert "denied by console_apo" in browser.find_element(By.ID, f"step-{ids['deny_me']}").text
    decided = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.kind-approval_decided")]
    assert len(decided) == 2 and any("checked with the customer <ok>" in d for d in decided)
    browser.get(BASE + "/refusals")
    assert browser.find_element(By.ID, "refusals-chart").find_elements(By.CSS_SELECTOR, "rect")
    shot(browser, "refusals")
    sign_out(browser)


def test_writer_cannot_decide_its_own(browser: WebDriver, ids: dict[str, Any]) -> None:
    sign_in(browser, "console_self", "acme")
    browser.get(BASE + "/approvals")
    card = browser.find_element(By.ID, f"request-{ids['self_try']}")
    submit(browser, card.find_element(By.CSS_SELECTOR, "button.grant"))
    err = browser.find_element(By.CSS_SELECTOR, ".flash.error").text
    assert "can act as demo_platform" in err and "42501" in err
    assert browser.find_elements(By.ID, f"request-{ids['self_try']}"), "still pending"
    sign_out(browser)


def test_approver_grants_on_the_request_s_page(browser: WebDriver, ids: dict[str, Any]) -> None:
    """The page the notifier links to: the call, why it asks, and the decision made there."""
    request = ids["page_grant"]
    # the link leads through sign-in and the scope to the request
    browser.get(f"{BASE}/approvals/{request}")
    assert "/login" in browser.current_url
    browser.find_element(By.ID, "role-input").send_keys("console_apo")
    browser.find_element(By.ID, "password-input").send_keys(PASSWORDS["console_apo"])
    submit(browser, browser.find_element(By.ID, "sign-in"))
    Select(browser.find_element(By.ID, "scope-select")).select_by_value("acme")
    submit(browser, browser.find_element(By.ID, "enter-scope"))
    assert browser.current_url == f"{BASE}/approvals/{request}"
    assert browser.find_element(By.ID, "status").text == "pending"
    assert browser.find_element(By.ID, "tool").text == "tickets.update"
    assert '"ticket": 5005' in browser.find_element(By.ID, "args").text
    assert "the customer asked" in browser.find_element(By.ID, "why").text
    assert browser.find_element(By.ID, "requested-by").text == "demo_platform"
    shot(browser, "approval-request")
    form = browser.find_element(By.ID, "decide")
    form.find_element(By.CSS_SELECTOR, ".reason-input").send_keys("ticket 5005 may be closed")
    submit(browser, form.find_element(By.CSS_SELECTOR, "button.grant"))
    assert browser.current_url == f"{BASE}/approvals/{request}"
    assert f"Request {request} granted." in browser.page_source
    assert browser.find_element(By.ID, "status").text == "granted"
    decided = browser.find_element(By.ID, "decided").text
    assert "console_apo" in decided and "ticket 5005 may be closed" in decided
    assert not browser.find_elements(By.ID, "decide")
    # the queue lists it among the decisions, and no longer as pending
    browser.get(BASE + "/approvals")
    assert not browser.find_elements(By.ID, f"request-{request}")
    assert "granted" in browser.find_element(By.ID, f"closed-{request}").text
    sign_out(browser)


def test_an_expired_request_cannot_be_granted_in_the_browser(
    browser: WebDriver, ids: dict[str, Any]
) -> None:
    request = ids["expired_request"]
    sign_in(browser, "console_apo", "acme")
    browser.get(f"{BASE}/approvals/{request}")
    assert browser.find_element(By.ID, "status").text == "expired"
    assert "can no longer be granted" in browser.find_element(By.ID, "closed").text
    assert not browser.find_elements(By.CSS_SELECTOR, "button.grant")
    browser.get(BASE + "/approvals")
    assert not browser.find_elements(By.ID, f"request-{request}")
    assert "expired" in browser.find_element(By.ID, f"closed-{request}").text
    shot(browser, "approvals-expired")
    sign_out(browser)
