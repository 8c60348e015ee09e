"""Tool tasks (EnvCraft §4.2): a sampled tool chain grounded in real sessions (:mod:`.execute`), an initial
state with distractors and a proven verifier (:mod:`.initial`, :mod:`.verifier`), the user's text from a
persona (:mod:`.personas`, :mod:`.synth`), as resumable stages (:mod:`.stages`); cross-environment tasks
run in an environment group (:mod:`.composite`)."""
