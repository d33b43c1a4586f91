"""Zero-spend stand-ins for the model calls: the fake build agent, the fake mutator and the adversarial
escape agent. Each follows the same agent process contract as a real backend.

May import: only its own modules (the fakes stand alone, as a user's agent command would); never `mutator/`.
"""
