"""The emulator's backend (`--backend local`): cells on kary's emulated Flux on this machine."""
