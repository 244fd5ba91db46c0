"""RLlib glue (new API stack): the masked PPO RLModule (:mod:`.module`) and training, evaluation on the held-out
targets and the trained policy as an agent (:mod:`.train`). Importing this package imports neither Ray nor torch;
its submodules need the ``ray`` extra (``pip install 'brick-gym[ray]'``)."""
