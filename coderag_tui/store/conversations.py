"""Stored conversations: each turn is the question and the answer, with the answer's sources,
the outcome (complete, stopped, or the error line) and its opening section, as JSON text the
answerer decodes."""

from __future__ import annotations

from typing import Any

from coderag_tui.store.backend import StoreBackend


def message_rows(db: StoreBackend, conversation_id: int) -> list[tuple[Any, ...]]:
    """(role, content, sources JSON, created, outcome, invalid JSON, opening JSON) of a
    conversation's messages, oldest first."""
    return db.rows("SELECT role, content, sources, created, outcome, invalid, opening FROM messages "
                   "WHERE conversation_id=? ORDER BY id", (conversation_id,))


def conversation_rows(db: StoreBackend, limit: int = 100) -> list[tuple[Any, ...]]:
    """(id, title, created, updated, message count) of the conversations, latest first."""
    return db.rows("SELECT c.id, c.title, c.created, c.updated, "
                   "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id) "
                   "FROM conversations c ORDER BY c.updated DESC, c.id DESC LIMIT ?", (limit,))


def exists(db: StoreBackend, conversation_id: int, owner: str | None = None) -> bool:
    """Whether the conversation is there (and, with `owner`, belongs to that owner)."""
    found = owner_of(db, conversation_id)
    return found is not None and (owner is None or found == owner)


def owner_of(db: StoreBackend, conversation_id: int) -> str | None:
    """Who started the conversation ('' on this machine), None when there is none."""
    row = db.rows("SELECT owner FROM conversations WHERE id=?", (conversation_id,))
    return str(row[0][0]) if row else None


def delete(db: StoreBackend, conversation_id: int) -> None:
    with db.transaction():
        db.execute("DELETE FROM messages WHERE conversation_id=?", (conversation_id,))
        db.execute("DELETE FROM conversations WHERE id=?", (conversation_id,))


def save_turn(db: StoreBackend, conversation_id: int | None, title: str, question: str, answer: str,
              sources_json: str, outcome: str, invalid_json: str, now: float, opening_json: str = "",
              owner: str = "") -> int:
    """Store a question and its answer in one transaction, in a new conversation (titled
    `title`, belonging to `owner`) when `conversation_id` is None. Returns the conversation's id."""
    with db.transaction():
        if conversation_id is None:
            conversation_id = int(db.scalar("INSERT INTO conversations(title, created, updated, owner) "
                                            "VALUES(?, ?, ?, ?) RETURNING id", (title, now, now, owner)))
        else:
            db.execute("UPDATE conversations SET updated=? WHERE id=?", (now, conversation_id))
        db.execute("INSERT INTO messages(conversation_id, role, content, sources, created) "
                   "VALUES(?, 'user', ?, '[]', ?)", (conversation_id, question, now))
        db.execute("INSERT INTO messages(conversation_id, role, content, sources, created, outcome, invalid, "
                   "opening) VALUES(?, 'assistant', ?, ?, ?, ?, ?, ?)",
                   (conversation_id, answer, sources_json, now, outcome, invalid_json, opening_json))
    return conversation_id
