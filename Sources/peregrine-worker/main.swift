import Server

Main.run()
