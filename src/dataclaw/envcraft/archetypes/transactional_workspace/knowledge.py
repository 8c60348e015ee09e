"""Read-only knowledge base: the procedures agents cite when resolving tickets."""

from __future__ import annotations

from dataclaw.envcraft.archetypes.transactional_workspace.auth import require
from dataclaw.envcraft.runtime import invalid_argument, invalid_reference, tool


@tool("read", returns=["articles"])
def search_kb(session: dict, query: str, limit: int = 5) -> dict:
    """Search knowledge-base articles by words in their title and tags (best matches first).

    Args:
        query: words to look for, e.g. "sso certificate".
        limit: at most this many articles (1-20).
    """
    require(session, "view", "the knowledge base")
    if not 1 <= limit <= 20:
        raise invalid_argument("limit", "must be between 1 and 20")
    words = {w for w in query.lower().split() if w}
    if not words:
        raise invalid_argument("query", "give at least one word")
    scored = []
    for aid, art in session["kb_articles"].items():
        hay = set(art["title"].lower().replace("(", " ").replace(")", " ").split()) | set(art["tags"])
        score = len(words & hay)
        if score:
            scored.append((-score, aid, art))
    scored.sort(key=lambda row: (row[0], row[1]))
    return {
        "articles": [
            {
                "article_id": aid,
                "title": a["title"],
                "status": a["status"],
                "superseded_by": a["superseded_by"],
            }
            for _, aid, a in scored[:limit]
        ]
    }


@tool("read", returns=["article"])
def get_kb_article(session: dict, article_id: str) -> dict:
    """Read one knowledge-base article.

    Args:
        article_id: the article id, e.g. "KB-207".
    """
    require(session, "view", "the knowledge base")
    kb = session["kb_articles"]
    if article_id not in kb:
        raise invalid_reference("knowledge-base article", article_id, sorted(kb))
    return {"article": {"article_id": article_id, **kb[article_id]}}
