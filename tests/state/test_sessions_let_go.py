"""A live chat memory lets go of lets its session go too. The conversations kept in memory
are 64 at most, but the session each chat's audit and calibration live in stayed: 300 chats
through ctx/prepare left 300 sessions in memory, and a gateway's memory grew with every new
chat (133 to 151 MB over 7,500, still rising). A chat that comes back reads its session again;
what it keeps is in the store."""

from __future__ import annotations

from test_conversations import SYSTEM
from test_restart_ids import ask

from ctxlayer.state import State


async def test_the_sessions_of_chats_let_go_are_let_go(tmp_path):
    st = State(tmp_path / "state")
    try:
        st.conversations.max_live = 4
        for k in range(12):
            await ask(st, [SYSTEM, {"role": "user", "id": "u0", "content": f"chat {k}?"}], None)
        await st.conversations.settled()
        chats = {c.session_id for c in st.conversations._live.values()}
        sessions = {sid for _, sid in st.sessions._live}
        assert len(chats) == 4 and sessions <= chats, (chats, sessions)
        # one let go comes back: its session is read again, its audit and calibration kept
        back = await ask(st, [SYSTEM, {"role": "user", "id": "u0", "content": "chat 0?"}], None)
        await st.conversations.settled()
        assert back.session_id in {sid for _, sid in st.sessions._live}
    finally:
        st.close()
