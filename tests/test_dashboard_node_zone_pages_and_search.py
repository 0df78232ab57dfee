"""Nodes and zones have pages (a node's links both ways slowest first, its pods and decisions; a
zone's nodes and medians to every zone), node names link to them, and one search box finds nodes,
zones, AppGroups and pods."""

from __future__ import annotations

import re

import pytest

from tests.support.dashboard_seed import place, seed_boutique, seed_triage, triage_rtt_ms

pytestmark = pytest.mark.django_db


@pytest.fixture
def triage():
    seed_triage()
    group = seed_boutique()
    place("frontend", "f2")
    return group


def test_node_page_lists_its_links_slowest_first_and_its_pods(client, triage):
    body = client.get("/nodes/a1/").content.decode()
    peers = re.findall(r'<tr data-peer="([^"]+)">', body)
    assert sorted(peers) == ["a2", "a3", "b1", "b2", "f1", "f2"]
    assert peers[0] == max(peers, key=lambda p: triage_rtt_ms("a1", p))  # slowest outgoing first
    assert 'href="/links/a1/f2' in body and 'href="/zones/A' in body
    far = client.get("/nodes/f2").content.decode()
    assert "default/frontend-0" in far and f'href="/appgroups/{triage.pk}"' in far and "open=newest" in far


def test_zone_page_lists_nodes_and_medians_to_every_zone(client, triage):
    body = client.get("/zones/FAR/").content.decode()
    assert 'href="/nodes/f1' in body and 'href="/nodes/f2' in body
    assert 'href="/zones/A' in body and 'href="/zones/B' in body and "(within)" in body
    assert "default/frontend-0" in body


def test_unknown_node_and_zone_are_404_naming_them(client, triage):
    response = client.get("/nodes/nope/")
    assert response.status_code == 404
    assert client.get("/zones/NOPE/").status_code == 404


def test_search_finds_nodes_zones_appgroups_and_pods(client, triage):
    body = client.get("/search/?q=f").content.decode()
    assert 'href="/nodes/f1' in body and 'href="/nodes/f2' in body
    assert 'href="/zones/FAR' in body
    assert "default/frontend-0" in body
    groups = client.get("/search/?q=default/online").content.decode()
    assert f'href="/appgroups/{triage.pk}"' in groups
    empty = client.get("/search/?q=zzzz").content.decode()
    assert "0 result(s)" in empty


def test_node_names_link_to_their_pages(client, triage):
    assert 'href="/nodes/f2' in client.get(f"/appgroups/{triage.pk}").content.decode()
    assert 'href="/nodes/a1' in client.get("/links/a1/b1/").content.decode()
    assert 'id="search-q"' in client.get("/").content.decode()
