"""The settings' parts: how one key is declared (`keys.py`) and the small frozen records that group
the dotted sections of config.json (`records.py`: score, screen, sequential, critic, watchdog).
`mutator/config.py` builds the whole `Settings` from them and loads it. May import eval/ only; never
another room of mutator/.
"""
