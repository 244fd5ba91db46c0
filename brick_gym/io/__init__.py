"""Files, paths, locks and safe text previews: the ground floor every other room stands on.

Atomic writes and one bounded JSON loader (:mod:`~brick_gym.io.files`), safe ids and joins for names from untrusted
input (:mod:`~brick_gym.io.paths`), one writer per run folder (:mod:`~brick_gym.io.locks`), and short text of
untrusted values for messages (:mod:`~brick_gym.io.previews`). Imports nothing else of brick_gym.
"""
