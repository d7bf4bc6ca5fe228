"""Titles questions are drafted from, as teams' pipelines write them.

- A scraper that took each page's HTML title kept the site's name ("The NVIDIA Isaac Platform | Physical AI &
  Humanoid Robotics", team #12): every question drafted from a title carried it too.
- A title that is the page's file or route name ("03-urdf", team #3's `page`) was asked as the question
  "a-glossary": the page's own first heading is its title where it has one.
"""

from __future__ import annotations

from retrieval_lib.drafting.pages import _SLUG, Page, _site_suffix

SITE = " | Physical AI & Humanoid Robotics"


def _pages(titles):
    return [Page(key=f"p{i}", expected=f"/docs/p{i}", title=t) for i, t in enumerate(titles)]


def test_the_site_name_every_title_ends_with_is_found():
    titles = [f"{t}{SITE}" for t in ("The NVIDIA Isaac Platform", "Actions, Parameters and Lifecycle Nodes",
                                     "Appendix A: Glossary", "Why Simulate?")]
    assert _site_suffix(_pages(titles)) == SITE
    assert _site_suffix(_pages([*titles, "Home"])) == SITE  # 4 of 5: a page without it does not hide it


def test_titles_that_share_no_suffix_keep_theirs():
    assert _site_suffix(_pages(["ROS 2 - Nodes", "Gazebo - Worlds", "Isaac Sim", "URDF | Joints"])) is None
    assert _site_suffix(_pages(["A | Site", "B | Site"])) is None  # two are not a pattern
    assert _site_suffix(_pages([None, "Sim-to-Real Transfer", "Vision-Language-Action Models"])) is None


def test_a_file_or_route_name_is_not_a_title_to_ask():
    for slug in ("a-glossary", "03-urdf", "05-launch-files.md", "isaac-sim-setup"):
        assert _SLUG.fullmatch(slug)
    for title in ("Appendix A: Glossary", "URDF", "Sim-to-Real Transfer", "ROS 2 Nodes", "Why Simulate?"):
        assert not _SLUG.fullmatch(title)
