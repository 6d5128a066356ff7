"""Pure analysis: Profile in, frozen result out. No I/O, printing, torch or numpy."""
