"""Private implementation modules of rl_contracts: no stability promise; import from the public modules."""
