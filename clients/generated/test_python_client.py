"""The Python client that openapi-python-client generates from api/openapi.yaml, driven against a
real popup-api (scripts/clients.sh generates it, puts it on PYTHONPATH and starts the API):
the homepage GET (a popup and the null answer), an action, and an admin create -> get -> update
round trip, every answer parsed into the generated models."""

import os
import uuid

from popup_client import AuthenticatedClient, Client
from popup_client.api.admin import create_popup, get_popup_by_id, update_popup
from popup_client.api.public import get_popup, post_action
from popup_client.models import Action, ActionKind, Decision, Platform, Popup, PopupInput, PublicPopup
from popup_client.types import UNSET

API = os.environ["POPUP_CLIENTS_API"]
ADMIN = os.environ["POPUP_CLIENTS_ADMIN"]
TOKEN = os.environ["POPUP_CLIENTS_TOKEN"]


def admin_client() -> AuthenticatedClient:
    return AuthenticatedClient(base_url=ADMIN, token=TOKEN, raise_on_unexpected_status=True)


def public_client() -> Client:
    return Client(base_url=API, raise_on_unexpected_status=True)


def new_popup(uid: str, region: str) -> Popup:
    """An active Android popup for the users of region (one of the test's own)."""
    body = PopupInput.from_dict({
        "name": "generated python " + uid, "status": "active", "title": "Hello", "content": "from the generated client",
        "buttons": [{"text": "Go", "link_url": "https://shop.example/go"}, {"text": "Later"}],
        "ext": {"theme": "dark"}, "targeting": {"platforms": ["android"], "regions": [region]},
    })
    res = create_popup.sync_detailed(client=admin_client(), body=body)
    assert res.status_code == 201, res.content
    assert isinstance(res.parsed, Popup)
    return res.parsed


def test_homepage_answers_parse_with_a_popup_and_without():
    uid, region = "py-" + uuid.uuid4().hex[:16], "py" + uuid.uuid4().hex[:8]
    created = new_popup(uid, region)
    res = get_popup.sync_detailed(client=public_client(), uid=uid, platform=Platform.ANDROID, app_version="8.10.0", region=region)
    assert res.status_code == 200
    decision = res.parsed
    assert isinstance(decision, Decision)
    assert isinstance(decision.popup, PublicPopup)
    assert decision.popup.id == created.id
    assert decision.popup.title == "Hello"
    assert [b.text for b in decision.popup.buttons] == ["Go", "Later"]
    assert decision.popup.ext.to_dict() == {"theme": "dark"}
    assert decision.decision_id

    # the same user again: shown already (reshow after a day), so the null answer
    res = get_popup.sync_detailed(client=public_client(), uid=uid, platform=Platform.ANDROID, app_version="8.10.0", region=region)
    assert res.status_code == 200
    assert isinstance(res.parsed, Decision)
    assert res.parsed.popup is None
    assert res.parsed.decision_id is UNSET

    # a click on the first button, echoing the decision id
    act = Action(uid=uid, action=ActionKind.CLICK, event_id="py-" + uuid.uuid4().hex, decision_id=decision.decision_id, button=0)
    res = post_action.sync_detailed(created.id, client=public_client(), body=act)
    assert res.status_code == 202
    assert res.parsed.status.value == "accepted"


def test_admin_round_trip_create_get_update():
    created = new_popup("py-" + uuid.uuid4().hex[:16], "py" + uuid.uuid4().hex[:8])
    got = get_popup_by_id.sync_detailed(created.id, client=admin_client())
    assert got.status_code == 200
    popup = got.parsed
    assert isinstance(popup, Popup)
    assert popup.to_dict() == created.to_dict()
    assert popup.experiment is None
    assert popup.start_at is None

    body = PopupInput.from_dict({**popup.to_dict(), "title": "Hello again", "priority": 5})
    updated = update_popup.sync_detailed(created.id, client=admin_client(), body=body, if_match=got.headers["ETag"])
    assert updated.status_code == 200, updated.content
    assert isinstance(updated.parsed, Popup)
    assert updated.parsed.title == "Hello again"
    assert updated.parsed.priority == 5
    assert updated.parsed.revision == popup.revision + 1
