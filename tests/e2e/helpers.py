"""Steps every browser test takes: log in as the test owner, switch the page language."""

from playwright.sync_api import expect

USERNAME, PASSWORD = "li", "a long pass phrase 42"


def log_in(page, live_server, path="/"):
    page.goto(f"{live_server.url}/accounts/login/?next={path}")
    page.fill("#id_username", USERNAME)
    page.fill("#id_password", PASSWORD)
    page.press("#id_password", "Enter")
    page.wait_for_url(f"{live_server.url}{path}")


def switch_language(page, code):
    page.click(f"form.lang button[value={code}]")  # one click: a button per other language
    # The click starts a navigation; wait for the new page, not the load state of the old one.
    expect(page.locator("html")).to_have_attribute("lang", code)
