import Supervision

SupervisorMain.run()
