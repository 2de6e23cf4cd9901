"""Model backends behind two small protocols (Scorer, Generator), chosen by a spec string."""
