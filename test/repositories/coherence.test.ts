import t from 'tap'
import { coherenceSuite } from './coherence.js'

// Every repository method and the store's key and import paths, at random, on both engines.
coherenceSuite(t)
